package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// A server that takes only certificates, reached as OpenSSH reaches it:
// with the -cert.pub beside the identity, with an explicit
// CertificateFile (its key in a file or in the agent), and with the
// agent's certificate of a named identity under IdentitiesOnly.
func TestUserCertificates(t *testing.T) {
	ca := sshtest.NewCA(t)
	s := sshtest.NewServer(t, sshtest.WithTrustedUserCA(ca))
	tg := targetFor(t, s)
	dial := func(t *testing.T) error {
		t.Helper()
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(t); err != nil {
		t.Fatalf("the -cert.pub beside the identity: %v", err)
	}

	elsewhere := filepath.Join(t.TempDir(), "user-cert.pub")
	if err := os.Rename(s.UserCertPath, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := dial(t); err == nil {
		t.Fatal("the bare key logged in on a certificate-only server")
	}
	tg.CertificateFiles = []string{elsewhere}
	if err := dial(t); err != nil {
		t.Fatalf("CertificateFile with its key in IdentityFile: %v", err)
	}

	pem, err := os.ReadFile(s.UserKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := xssh.ParseRawPrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: raw}); err != nil {
		t.Fatal(err)
	}
	serveAgent(t, kr)
	tg.IdentityFiles, tg.IdentitiesOnly = []string{s.UserKeyPath + ".pub"}, true
	if err := dial(t); err != nil {
		t.Fatalf("CertificateFile with its key in the agent: %v", err)
	}

	tg.CertificateFiles = nil
	cert := readPublicKey(elsewhere).(*xssh.Certificate)
	kr = agent.NewKeyring()
	for i := 0; i < 8; i++ { // unrelated keys, more than MaxAuthTries: never offered
		if err := kr.Add(agent.AddedKey{PrivateKey: newEd25519(t)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kr.Add(agent.AddedKey{PrivateKey: raw, Certificate: cert}); err != nil {
		t.Fatal(err)
	}
	serveAgent(t, kr)
	if err := dial(t); err != nil {
		t.Fatalf("the agent's certificate of the named identity, IdentitiesOnly: %v", err)
	}
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
