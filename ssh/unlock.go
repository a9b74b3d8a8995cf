package ssh

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"sync"

	xssh "golang.org/x/crypto/ssh"
)

// passphraseTries is how often a wrong passphrase is asked again, as
// OpenSSH's NumberOfPasswordPrompts default.
const passphraseTries = 3

// Unlocker asks for the passphrase of an identity file no agent holds, as
// OpenSSH does: only once the server would accept the key, once per key
// for as long as the Unlocker lives (one command), and what it decrypts is
// kept in memory only.
type Unlocker struct {
	// Prompt shows prompt and reads a passphrase without echo; nil when
	// there is no terminal to ask on.
	Prompt func(prompt string) ([]byte, error)

	mu   sync.Mutex
	keys map[string]unlocked
}

type unlocked struct {
	signer xssh.Signer
	err    error
}

func (u *Unlocker) canAsk() bool { return u != nil && u.Prompt != nil }

// signer decrypts the key at path with the passphrase asked for, once:
// a key already asked about answers as it did then.
func (u *Unlocker) signer(path string, pem []byte) (xssh.Signer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if k, ok := u.keys[path]; ok {
		return k.signer, k.err
	}
	if u.keys == nil {
		u.keys = map[string]unlocked{}
	}
	k := unlocked{err: &PassphraseKeyError{Path: path, Wrong: true}}
	prompt := fmt.Sprintf("Enter passphrase for key '%s': ", path)
	for range passphraseTries {
		pass, err := u.Prompt(prompt)
		if err == nil && len(pass) == 0 {
			err = fmt.Errorf("identity %s: no passphrase entered", path)
		}
		if err != nil {
			k.err = err
			break
		}
		s, err := xssh.ParsePrivateKeyWithPassphrase(pem, pass)
		clear(pass)
		if err == nil {
			k = unlocked{signer: s}
			break
		}
		if !errors.Is(err, x509.IncorrectPasswordError) {
			k.err = fmt.Errorf("identity %s: %w", path, err)
			break
		}
		prompt = fmt.Sprintf("Bad passphrase, try again for %s: ", path)
	}
	u.keys[path] = k
	return k.signer, k.err
}

// lockedKey is a passphrase-protected identity file offered by its public
// key; the passphrase is asked for only when the server accepts the key
// and a signature is due.
type lockedKey struct {
	path     string
	pem      []byte
	pub      xssh.PublicKey
	unlock   *Unlocker
	deadline *hopDeadline // the dial's, stopped while asking
}

func (k *lockedKey) PublicKey() xssh.PublicKey { return k.pub }

func (k *lockedKey) signer() (xssh.Signer, error) {
	k.deadline.pause()
	defer k.deadline.resume()
	return k.unlock.signer(k.path, k.pem)
}

func (k *lockedKey) Sign(rand io.Reader, data []byte) (*xssh.Signature, error) {
	s, err := k.signer()
	if err != nil {
		return nil, err
	}
	return s.Sign(rand, data)
}

func (k *lockedKey) SignWithAlgorithm(rand io.Reader, data []byte, algorithm string) (*xssh.Signature, error) {
	s, err := k.signer()
	if err != nil {
		return nil, err
	}
	as, ok := s.(xssh.AlgorithmSigner)
	if !ok {
		return nil, fmt.Errorf("identity %s: cannot sign with %s", k.path, algorithm)
	}
	return as.SignWithAlgorithm(rand, data, algorithm)
}

// Algorithms are those the decrypted key will sign with, known from its
// public half.
func (k *lockedKey) Algorithms() []string {
	if k.pub.Type() == xssh.KeyAlgoRSA {
		return []string{xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA}
	}
	return []string{k.pub.Type()}
}
