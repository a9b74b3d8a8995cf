// Package sshsigtest makes signing keys and signatures for tests with the
// real ssh-keygen, the way a release is signed, so that no private key is
// ever kept in the repository.
package sshsigtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Signer is a key pair ssh-keygen made.
type Signer struct {
	KeyPath       string // the private key, unencrypted, 0600
	AuthorizedKey string // the public key as one authorized_keys line
	PublicKey     ssh.PublicKey
}

// New makes a key pair of keyType (ed25519, ecdsa, rsa) in a new
// directory under dir.
func New(dir, keyType string) (*Signer, error) {
	keyDir, err := os.MkdirTemp(dir, "key")
	if err != nil {
		return nil, err
	}
	priv := filepath.Join(keyDir, "id_"+keyType)
	if _, err := run(nil, "-q", "-t", keyType, "-N", "", "-C", "test release key", "-f", priv); err != nil {
		return nil, err
	}
	pubLine, err := os.ReadFile(priv + ".pub")
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(pubLine)
	if err != nil {
		return nil, err
	}
	return &Signer{KeyPath: priv, AuthorizedKey: strings.TrimSpace(string(pubLine)), PublicKey: pub}, nil
}

// Sign is `ssh-keygen -Y sign -n namespace` over message, with any
// further options (-O hashalg=sha256): the armored signature.
func (s *Signer) Sign(namespace string, message []byte, opts ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "sshsigtest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	msg := filepath.Join(dir, "message")
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		return nil, err
	}
	if _, err := run(nil, append(append([]string{"-q", "-Y", "sign", "-n", namespace, "-f", s.KeyPath}, opts...), msg)...); err != nil {
		return nil, err
	}
	return os.ReadFile(msg + ".sig")
}

// KeygenVerify is `ssh-keygen -Y verify`'s verdict on sig as trusted's
// signature of message for namespace: nil when it accepts, else what it
// said.
func KeygenVerify(trusted ssh.PublicKey, namespace string, message, sig []byte) error {
	dir, err := os.MkdirTemp("", "sshsigtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, append([]byte("signer "), ssh.MarshalAuthorizedKey(trusted)...), 0o600); err != nil {
		return err
	}
	sigPath := filepath.Join(dir, "message.sig")
	if err := os.WriteFile(sigPath, sig, 0o600); err != nil {
		return err
	}
	_, err = run(message, "-Y", "verify", "-f", signers, "-I", "signer", "-n", namespace, "-s", sigPath)
	return err
}

func run(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("ssh-keygen", args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ssh-keygen %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}
