package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// serveAgent serves kr on a unix socket and points SSH_AUTH_SOCK at it.
func serveAgent(t *testing.T, kr agent.Agent) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ke-agent")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); agent.ServeAgent(kr, c) }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
}

// Like OpenSSH, an identity file that cannot be used is skipped, not
// fatal; and a .pub IdentityFile selects the agent's copy of that key.
func TestIdentityFilesSkipUnusableAndPubSelectsAgentKey(t *testing.T) {
	s := sshtest.NewServer(t)
	tg := targetFor(t, s)
	dir := t.TempDir()
	junk := filepath.Join(dir, "id_unknown")
	os.WriteFile(junk, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600)
	tg.IdentityFiles = []string{junk, filepath.Join(dir, "missing"), s.UserKeyPath}
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatalf("an unusable identity before a good one must be skipped: %v", err)
	}
	c.Close()

	// The private key lives only in the agent; the config names the .pub.
	pem, _ := os.ReadFile(s.UserKeyPath)
	raw, err := xssh.ParseRawPrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	for i := 0; i < 8; i++ { // more than MaxAuthTries of other keys
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		kr.Add(agent.AddedKey{PrivateKey: other})
	}
	kr.Add(agent.AddedKey{PrivateKey: raw})
	serveAgent(t, kr)
	tg.IdentityFiles, tg.IdentitiesOnly = []string{s.UserKeyPath + ".pub"}, true
	c, err = Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatalf(".pub IdentityFile with the key in the agent: %v", err)
	}
	c.Close()
}

// Nothing to offer is an auth failure (exit 6) that still reports the host
// key, not a local error before connecting.
func TestNoIdentitiesIsAuthFailure(t *testing.T) {
	s := sshtest.NewServer(t)
	tg := targetFor(t, s)
	tg.IdentityFiles = []string{filepath.Join(t.TempDir(), "none")}
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	var e *Error
	var none *NoIdentitiesError
	if !errors.As(err, &e) || e.Class != ClassAuth || !errors.As(err, &none) {
		t.Fatalf("want an auth failure naming the missing identities, got %v", err)
	}
	if len(e.Observed) != 1 {
		t.Errorf("the host key should still be reported: %+v", e.Observed)
	}
}

// A server that no longer offers the pinned key type is a changed key
// (exit 5), not an unknown error.
func TestPinnedKeyTypeGoneIsHostKeyChanged(t *testing.T) {
	s := sshtest.NewServer(t) // ed25519 only
	tg := targetFor(t, s)
	pins := Pins{tg.Addr(): {KeyType: xssh.KeyAlgoECDSA256, Fingerprint: "SHA256:old"}}
	_, err := Dial(context.Background(), tg, DialOptions{Pins: pins, Mode: Enforce})
	var e *Error
	var hk *HostKeyChangedError
	if !errors.As(err, &e) || e.Class != ClassHostKey || !errors.As(err, &hk) {
		t.Fatalf("want host_key, got %v", err)
	}
}

// Algorithms reaches a key the client would not choose by default.
func TestAlgorithmsReachNonDefaultKey(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.WithHostKeyTypes(sshtest.KeyEd25519, sshtest.KeyECDSA, sshtest.KeyRSA))
	tg := targetFor(t, s)
	for _, fam := range KeyAlgorithmFamilies {
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Algorithms: map[string][]string{tg.Addr(): fam}})
		if fam[0] == xssh.KeyAlgoECDSA384 || fam[0] == xssh.KeyAlgoECDSA521 {
			if err == nil {
				t.Errorf("%s: the server has no such key, the dial should fail", fam[0])
				c.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", fam, err)
		}
		if got := c.Observed[0].KeyType; got != hostKeyType(fam[0]) {
			t.Errorf("asked for %v, got %s", fam, got)
		}
		c.Close()
	}
}

func hostKeyType(alg string) string {
	if alg == xssh.KeyAlgoRSASHA512 {
		return xssh.KeyAlgoRSA
	}
	return alg
}
