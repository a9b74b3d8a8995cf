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
// ssh insist on) and path+".pub".
func writeKeyPair(path, keyType, passphrase string) (ssh.PublicKey, error) {
	priv, err := generateKey(keyType)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "sshtest")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "sshtest", []byte(passphrase))
	}
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
