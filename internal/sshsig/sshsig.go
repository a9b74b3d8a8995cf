// Package sshsig verifies the detached signatures `ssh-keygen -Y sign`
// writes: an armored SSHSIG blob that names the signer's public key, a
// namespace (what the signature is for), a hash algorithm and the
// signature over a fixed preamble, those fields and the hash of the
// message. It verifies only; releases are signed with ssh-keygen.
package sshsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/ssh"
)

const (
	magic      = "SSHSIG"
	version    = 1
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
)

// Signature is one parsed SSHSIG.
type Signature struct {
	PublicKey     ssh.PublicKey // the signer's key, as the signature names it
	Namespace     string
	HashAlgorithm string // sha256 or sha512
	reserved      string
	sig           *ssh.Signature
}

// Parse reads an armored signature, as ssh-keygen writes it.
func Parse(armored []byte) (*Signature, error) {
	body, ok := bytes.CutPrefix(bytes.TrimSpace(armored), []byte(armorBegin))
	if !ok {
		return nil, errors.New("not an SSH signature: no " + armorBegin + " line")
	}
	body, ok = bytes.CutSuffix(body, []byte(armorEnd))
	if !ok {
		return nil, errors.New("not an SSH signature: no " + armorEnd + " line")
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
	if err != nil {
		return nil, fmt.Errorf("SSH signature: %w", err)
	}
	rest, ok := bytes.CutPrefix(raw, []byte(magic))
	if !ok {
		return nil, errors.New("SSH signature: no " + magic + " preamble")
	}
	var blob struct {
		Version       uint32
		PublicKey     []byte
		Namespace     string
		Reserved      string
		HashAlgorithm string
		Signature     []byte
	}
	if err := ssh.Unmarshal(rest, &blob); err != nil {
		return nil, fmt.Errorf("SSH signature: %w", err)
	}
	if blob.Version != version {
		return nil, fmt.Errorf("SSH signature: version %d, want %d", blob.Version, version)
	}
	pub, err := ssh.ParsePublicKey(blob.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("SSH signature: the signer's key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(blob.Signature, &sig); err != nil {
		return nil, fmt.Errorf("SSH signature: %w", err)
	}
	if _, err := newHash(blob.HashAlgorithm); err != nil {
		return nil, err
	}
	return &Signature{PublicKey: pub, Namespace: blob.Namespace, HashAlgorithm: blob.HashAlgorithm, reserved: blob.Reserved, sig: &sig}, nil
}

func newHash(name string) (hash.Hash, error) {
	switch name {
	case "sha512":
		return sha512.New(), nil
	case "sha256":
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("SSH signature: hash algorithm %q, want sha512 or sha256", name)
}

// WrongKeyError is a valid-looking signature by a key other than the one
// trusted.
type WrongKeyError struct{ Got, Want string } // SHA256 fingerprints

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("signed by key %s, not the trusted %s", e.Got, e.Want)
}

// Verify checks that armored is trusted's signature of message for
// namespace. Another key, another namespace, or a signature that does
// not match the message is an error saying which.
func Verify(trusted ssh.PublicKey, namespace string, message, armored []byte) error {
	s, err := Parse(armored)
	if err != nil {
		return err
	}
	if !bytes.Equal(s.PublicKey.Marshal(), trusted.Marshal()) {
		return &WrongKeyError{Got: ssh.FingerprintSHA256(s.PublicKey), Want: ssh.FingerprintSHA256(trusted)}
	}
	if s.Namespace != namespace {
		return fmt.Errorf("signed for namespace %q, want %q", s.Namespace, namespace)
	}
	// SHA-1 RSA signatures are refused, as ssh-keygen -Y verify does.
	if s.sig.Format == ssh.KeyAlgoRSA {
		return errors.New("SSH signature: ssh-rsa (SHA-1) signatures are not accepted")
	}
	h, _ := newHash(s.HashAlgorithm)
	h.Write(message)
	signed := append([]byte(magic), ssh.Marshal(struct {
		Namespace, Reserved, HashAlgorithm string
		Hash                               []byte
	}{s.Namespace, s.reserved, s.HashAlgorithm, h.Sum(nil)})...)
	if err := trusted.Verify(signed, s.sig); err != nil {
		return fmt.Errorf("the signature does not match the file (altered since it was signed?): %w", err)
	}
	return nil
}
