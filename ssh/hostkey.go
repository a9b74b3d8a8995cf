package ssh

import (
	"net"
	"sync"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// Pin is a trusted host key: its type and SHA256 fingerprint.
type Pin struct {
	KeyType     string `json:"key_type"`
	Fingerprint string `json:"fingerprint"`
}

func (p Pin) String() string { return p.KeyType + " " + p.Fingerprint }

// IsZero reports whether nothing is pinned.
func (p Pin) IsZero() bool { return p.Fingerprint == "" }

// PinOf returns the pin for a public key.
func PinOf(key xssh.PublicKey) Pin {
	return Pin{KeyType: key.Type(), Fingerprint: xssh.FingerprintSHA256(key)}
}

// Observed is a host key a hop presented during a dial.
type Observed struct {
	Hop  string `json:"hop"`     // sshconfig.Target.Label()
	Addr string `json:"address"` // host:port dialled
	Pin
}

// TrustMode says how a dial treats host keys.
type TrustMode int

const (
	// Enforce requires a pin for every hop and fails closed on mismatch.
	Enforce TrustMode = iota
	// Record accepts unpinned keys (recording them) but still fails on a
	// mismatch with an existing pin: `host test` and `host trust` use it.
	Record
)

// Pins maps a hop address (host:port) to its pinned key.
type Pins map[string]Pin

// KeyAlgorithmFamilies are the host key types a server may offer, each as
// the algorithms that negotiate it; trust tries them one by one to reach
// the key a user named by fingerprint.
var KeyAlgorithmFamilies = [][]string{
	{xssh.KeyAlgoED25519},
	{xssh.KeyAlgoECDSA256},
	{xssh.KeyAlgoECDSA384},
	{xssh.KeyAlgoECDSA521},
	{xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA},
}

// defaultHostKeyAlgorithms is OpenSSH's default HostKeyAlgorithms, in
// its order, less the security-key types x/crypto cannot verify. The
// order matters: a server picks the first it supports, and some (Dropbear
// with one host key) list algorithms they have no key for.
var defaultHostKeyAlgorithms = []string{
	xssh.CertAlgoED25519v01, xssh.CertAlgoECDSA256v01, xssh.CertAlgoECDSA384v01, xssh.CertAlgoECDSA521v01,
	xssh.CertAlgoRSASHA512v01, xssh.CertAlgoRSASHA256v01,
	xssh.KeyAlgoED25519, xssh.KeyAlgoECDSA256, xssh.KeyAlgoECDSA384, xssh.KeyAlgoECDSA521,
	xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256,
}

// hostKeyAlgorithms restricts negotiation to the pinned key's algorithms so
// that a server with several host keys presents the pinned one; with
// nothing pinned it is OpenSSH's order.
func hostKeyAlgorithms(p Pin) []string {
	switch p.KeyType {
	case "":
		return defaultHostKeyAlgorithms
	case xssh.KeyAlgoRSA:
		return []string{xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA}
	default:
		return []string{p.KeyType}
	}
}

// keyRecorder collects what each hop presented, safe for the concurrent
// hops of one dial.
type keyRecorder struct {
	mu   sync.Mutex
	seen []Observed
}

func (r *keyRecorder) add(o Observed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, o)
}

func (r *keyRecorder) all() []Observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Observed(nil), r.seen...)
}

// callback builds the host key check for one hop.
func (r *keyRecorder) callback(hop *sshconfig.Target, pin Pin, mode TrustMode) xssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key xssh.PublicKey) error {
		got := PinOf(key)
		r.add(Observed{Hop: hop.Label(), Addr: hop.Addr(), Pin: got})
		switch {
		case pin.IsZero() && mode == Record:
			return nil
		case pin.IsZero():
			return &TrustRequiredError{Observed: got}
		case got != pin:
			return &HostKeyChangedError{Expected: pin, Got: got}
		}
		return nil
	}
}
