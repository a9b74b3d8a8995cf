package sshtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/crypto/ssh"
)

// Key types accepted by WithHostKeyTypes and Fingerprint.
const (
	KeyEd25519 = "ed25519"
	KeyECDSA   = "ecdsa"
	KeyRSA     = "rsa"
)

func generateKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case KeyEd25519:
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	case KeyECDSA:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyRSA:
		// 2048 bits: accepted by every OpenSSH, and much faster to generate than 3072.
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("sshtest: unknown key type %q", keyType)
}

// writeKeyPair generates a key and writes it in OpenSSH format to path (0600, which sshd and
// ssh insist on) and path+".pub". A passphrase-protected key is made by ssh-keygen with one KDF
// round: as real a key as its default of 16, and decrypted in a fraction of the time, which
// matters under the race detector.
func writeKeyPair(path, keyType, passphrase string) (ssh.PublicKey, error) {
	if passphrase != "" {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", keyType, "-a", "1", "-N", passphrase, "-C", "sshtest", "-f", path).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
		b, err := os.ReadFile(path + ".pub")
		if err != nil {
			return nil, err
		}
		pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
		return pub, err
	}
	priv, err := generateKey(keyType)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "sshtest")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(pub), 0o644); err != nil {
		return nil, err
	}
	return pub, nil
}
