package ssh

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// authPlan is the ordered list of signers to offer one hop, plus what was
// skipped and why, so an auth failure can say what to do.
type authPlan struct {
	signers []xssh.Signer
	locked  []string // passphrase-protected identity files no agent holds
	none    *NoIdentitiesError
	closer  func()
}

// planAuth follows OpenSSH: identity files in config order (through the
// agent when it holds the key, so no passphrase is needed), then the other
// agent keys unless IdentitiesOnly, which keeps a full agent from
// exhausting the server's MaxAuthTries.
func planAuth(t *sshconfig.Target) (*authPlan, error) {
	p := &authPlan{closer: func() {}}
	agentSigners, closer := agentSigners(t.IdentityAgent)
	p.closer = closer
	used := map[string]bool{}
	byKey := map[string]xssh.Signer{}
	for _, s := range agentSigners {
		byKey[string(s.PublicKey().Marshal())] = s
	}
	for _, path := range t.IdentityFiles {
		signer, locked := identitySigner(path, byKey)
		if locked {
			p.locked = append(p.locked, path)
		}
		if signer == nil {
			continue
		}
		k := string(signer.PublicKey().Marshal())
		if !used[k] {
			used[k] = true
			p.signers = append(p.signers, signer)
		}
	}
	if !t.IdentitiesOnly {
		for _, s := range agentSigners {
			if k := string(s.PublicKey().Marshal()); !used[k] {
				used[k] = true
				p.signers = append(p.signers, s)
			}
		}
	}
	if len(p.signers) == 0 && len(p.locked) == 0 {
		p.none = &NoIdentitiesError{Tried: t.IdentityFiles}
	}
	return p, nil
}

// identitySigner turns one IdentityFile into a signer, preferring the
// agent's copy of the key. Like OpenSSH it skips what it cannot use (a
// missing file, a key type it does not handle) instead of failing the
// dial; a .pub file names a key the agent holds. locked reports a
// passphrase-protected key the agent does not hold.
func identitySigner(path string, agentKeys map[string]xssh.Signer) (signer xssh.Signer, locked bool) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	if pub := parsePublicKey(pem); pub != nil {
		return agentKeys[keyBytes(pub)], false
	}
	signer, err = xssh.ParsePrivateKey(pem)
	var missing *xssh.PassphraseMissingError
	switch {
	case err == nil:
		if s, ok := agentKeys[string(signer.PublicKey().Marshal())]; ok {
			return s, false
		}
		return signer, false
	case errors.As(err, &missing):
		pub := missing.PublicKey
		if pub == nil {
			pub = readPublicKey(path + ".pub")
		}
		if s, ok := agentKeys[keyBytes(pub)]; ok {
			return s, false
		}
		return nil, true
	}
	return nil, false
}

// NoIdentitiesError: nothing to offer the server (exit 6).
type NoIdentitiesError struct{ Tried []string }

func (e *NoIdentitiesError) Error() string {
	return fmt.Sprintf("no identities to offer: ssh-agent holds no usable key and no IdentityFile is readable (tried %s)", strings.Join(e.Tried, ", "))
}

func keyBytes(k xssh.PublicKey) string {
	if k == nil {
		return ""
	}
	return string(k.Marshal())
}

func readPublicKey(path string) xssh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parsePublicKey(b)
}

// parsePublicKey reads an authorized_keys-style public key, nil if b is
// anything else.
func parsePublicKey(b []byte) xssh.PublicKey {
	k, _, _, _, err := xssh.ParseAuthorizedKey(bytes.TrimSpace(b))
	if err != nil {
		return nil
	}
	return k
}

// agentSigners connects to the agent named by IdentityAgent (or
// SSH_AUTH_SOCK). No agent is not an error: key files may suffice.
func agentSigners(identityAgent string) ([]xssh.Signer, func()) {
	sock := identityAgent
	switch sock {
	case "none":
		return nil, func() {}
	case "", "SSH_AUTH_SOCK":
		sock = os.Getenv("SSH_AUTH_SOCK")
	default:
		sock = os.ExpandEnv(sock)
		if strings.HasPrefix(sock, "~/") {
			home, _ := os.UserHomeDir()
			sock = filepath.Join(home, sock[2:])
		}
	}
	if sock == "" {
		return nil, func() {}
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil, func() {}
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, func() {}
	}
	return signers, func() { conn.Close() }
}
