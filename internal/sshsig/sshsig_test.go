package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshsig/sshsigtest"
)

const ns = "kandev-exec-release"

func newSigner(t *testing.T, keyType string) *sshsigtest.Signer {
	t.Helper()
	s, err := sshsigtest.New(t.TempDir(), keyType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rsaSigner is one RSA key for every test: ssh-keygen takes seconds to
// make one.
var rsaSigner *sshsigtest.Signer

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sshsig-test")
	if err == nil {
		rsaSigner, err = sshsigtest.New(dir, "rsa")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func sign(t *testing.T, s *sshsigtest.Signer, namespace string, message []byte, opts ...string) []byte {
	t.Helper()
	sig, err := s.Sign(namespace, message, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// Every case gets the same verdict from Verify and from ssh-keygen -Y
// verify: key types and hash algorithms ssh-keygen signs with, and each
// way a signature can fail to be the trusted key's over this file.
func TestVerifyAgreesWithSSHKeygen(t *testing.T) {
	message := []byte("0123  kandev-exec-helper-linux-amd64.gz\n")
	ed, ec, rsa, other := newSigner(t, "ed25519"), newSigner(t, "ecdsa"), rsaSigner, newSigner(t, "ed25519")
	edSig := sign(t, ed, ns, message)
	for _, tc := range []struct {
		name    string
		trusted ssh.PublicKey
		message []byte
		sig     []byte
		want    string // "" accepts
	}{
		{"ed25519 sha512", ed.PublicKey, message, edSig, ""},
		{"ed25519 sha256", ed.PublicKey, message, sign(t, ed, ns, message, "-O", "hashalg=sha256"), ""},
		{"ecdsa", ec.PublicKey, message, sign(t, ec, ns, message), ""},
		{"rsa", rsa.PublicKey, message, sign(t, rsa, ns, message), ""},
		{"another key", other.PublicKey, message, edSig,
			"signed by key " + ssh.FingerprintSHA256(ed.PublicKey) + ", not the trusted " + ssh.FingerprintSHA256(other.PublicKey)},
		{"another namespace", ed.PublicKey, message, sign(t, ed, "file", message), `signed for namespace "file", want "kandev-exec-release"`},
		{"altered file", ed.PublicKey, append([]byte("f"), message...), edSig, "the signature does not match the file"},
		{"empty file", ed.PublicKey, nil, edSig, "the signature does not match the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.trusted, ns, tc.message, tc.sig)
			keygenErr := sshsigtest.KeygenVerify(tc.trusted, ns, tc.message, tc.sig)
			if (err == nil) != (keygenErr == nil) {
				t.Fatalf("Verify: %v; ssh-keygen -Y verify: %v", err, keygenErr)
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Verify: %v, want %q", err, tc.want)
			}
		})
	}
	var wk *WrongKeyError
	if err := Verify(other.PublicKey, ns, message, edSig); !errors.As(err, &wk) {
		t.Fatalf("another key: %T %v, want a *WrongKeyError", err, err)
	}
}

// What is not a signature at all is named as such, never accepted.
func TestParseRefusesMalformed(t *testing.T) {
	s := newSigner(t, "ed25519")
	good := sign(t, s, ns, []byte("x"))
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	begin, end := lines[0], lines[len(lines)-1]
	for _, tc := range []struct{ name, sig, want string }{
		{"empty", "", "no -----BEGIN SSH SIGNATURE----- line"},
		{"no end", strings.Join(lines[:len(lines)-1], "\n"), "no -----END SSH SIGNATURE----- line"},
		{"not base64", begin + "\n!!!\n" + end, "illegal base64"},
		{"magic only", begin + "\nU1NIU0lH\n" + end, "SSH signature:"},
		{"truncated", begin + "\n" + lines[1] + "\n" + end, "SSH signature:"},
		{"another magic", begin + "\nQUJDREVGAAAAAQ==\n" + end, "no SSHSIG preamble"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(s.PublicKey, ns, []byte("x"), []byte(tc.sig)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify: %v, want %q", err, tc.want)
			}
		})
	}
	got, err := Parse(good)
	if err != nil || got.Namespace != ns || got.HashAlgorithm != "sha512" || !bytes.Equal(got.PublicKey.Marshal(), s.PublicKey.Marshal()) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
}

// An RSA signature over SHA-1 (ssh-rsa), which ssh-keygen never makes
// for a file, is refused whatever else holds.
func TestVerifyRefusesSHA1RSA(t *testing.T) {
	s := rsaSigner
	message := []byte("sums\n")
	b, err := os.ReadFile(s.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha512.Sum512(message)
	signed := append([]byte(magic), ssh.Marshal(struct {
		Namespace, Reserved, HashAlgorithm string
		Hash                               []byte
	}{ns, "", "sha512", digest[:]})...)
	sig, err := key.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, signed, ssh.KeyAlgoRSA)
	if err != nil {
		t.Fatal(err)
	}
	blob := append([]byte(magic), ssh.Marshal(struct {
		Version                            uint32
		PublicKey                          []byte
		Namespace, Reserved, HashAlgorithm string
		Signature                          []byte
	}{1, s.PublicKey.Marshal(), ns, "", "sha512", ssh.Marshal(sig)})...)
	armored := []byte(armorBegin + "\n" + base64.StdEncoding.EncodeToString(blob) + "\n" + armorEnd + "\n")
	err = Verify(s.PublicKey, ns, message, armored)
	keygenErr := sshsigtest.KeygenVerify(s.PublicKey, ns, message, armored)
	if err == nil || !strings.Contains(err.Error(), "ssh-rsa (SHA-1) signatures are not accepted") || keygenErr == nil {
		t.Fatalf("Verify: %v; ssh-keygen -Y verify: %v", err, keygenErr)
	}
}
