package sshtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// CA is a certificate authority made for one test: its key signs user and
// host certificates with `ssh-keygen -s`, as an operator's CA would.
type CA struct {
	KeyPath   string // the CA's private key (0600); its public half at KeyPath+".pub"
	PublicKey ssh.PublicKey

	mu     sync.Mutex
	serial int
}

// NewCA makes a CA with a fresh ed25519 key.
func NewCA(t testing.TB) *CA {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca")
	pub, err := writeKeyPair(path, KeyEd25519, "")
	if err != nil {
		t.Fatalf("sshtest: CA key: %v", err)
	}
	return &CA{KeyPath: path, PublicKey: pub}
}

// Fingerprint is the CA key's "SHA256:..." fingerprint.
func (ca *CA) Fingerprint() string { return ssh.FingerprintSHA256(ca.PublicKey) }

// Cert says what a certificate certifies: the principals (user names, or
// host names), and how long it is valid, in ssh-keygen's -V form ("" is
// forever; "-2d:-1d" has expired; "+1d:+2d" is not valid yet).
type Cert struct {
	Principals []string
	Validity   string
}

// SignUserKey certifies the public key at pubPath as a user key and
// returns the certificate's path: pubPath's key path with -cert.pub, as
// ssh-keygen writes it and ssh looks for it.
func (ca *CA) SignUserKey(t testing.TB, pubPath string, c Cert) string {
	t.Helper()
	path, err := ca.sign(pubPath, false, c)
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	return path
}

func (ca *CA) sign(pubPath string, host bool, c Cert) (string, error) {
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	args := []string{"-q", "-s", ca.KeyPath, "-I", fmt.Sprintf("sshtest-%d", serial), "-z", fmt.Sprint(serial),
		"-n", strings.Join(c.Principals, ",")}
	if host {
		args = append(args, "-h")
	}
	if c.Validity != "" {
		args = append(args, "-V", c.Validity)
	}
	args = append(args, pubPath)
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ssh-keygen %v: %v: %s", args, err, out)
	}
	return strings.TrimSuffix(pubPath, ".pub") + "-cert.pub", nil
}

// WithTrustedUserCA makes sshd take only user certificates signed by ca
// (TrustedUserCAKeys, AuthorizedKeysFile none): the fixture's user key is
// certified for User() at UserCertPath, beside it, where ssh finds it.
func WithTrustedUserCA(ca *CA) Option {
	return func(s *Server) { s.userCA = ca }
}

// WithHostCertificate gives every host key a certificate from ca
// (HostCertificate), certifying c.
func WithHostCertificate(ca *CA, c Cert) Option {
	return func(s *Server) { s.hostCA, s.hostCert = ca, c }
}

// RecertifyHost restarts sshd, on the same port with the same host keys,
// presenting new certificates of them that certify c: a renewal, or an
// expired or misnamed certificate.
func (s *Server) RecertifyHost(c Cert) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	s.hostCert = c
	s.certifyHostKeysLocked()
	s.startLocked(false)
}

// HostCertificate is the certificate sshd presents for the host key of
// keyType (as Fingerprint takes it).
func (s *Server) HostCertificate(keyType string) *ssh.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.hostKeys {
		if k.keyType == keyType || k.pub.Type() == keyType {
			b, err := os.ReadFile(k.path + "-cert.pub")
			if err != nil {
				s.t.Fatalf("sshtest: %v", err)
			}
			pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
			if err != nil {
				s.t.Fatalf("sshtest: %v", err)
			}
			return pub.(*ssh.Certificate)
		}
	}
	s.t.Fatalf("sshtest: server has no %s host key", keyType)
	return nil
}

func (s *Server) certifyHostKeysLocked() {
	if s.hostCA == nil {
		return
	}
	for _, k := range s.hostKeys {
		if _, err := s.hostCA.sign(k.path+".pub", true, s.hostCert); err != nil {
			s.t.Fatalf("sshtest: host certificate: %v", err)
		}
	}
}
