package ssh

import (
	"net"
	"sync"
	"time"

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

// Observed is a host key a hop presented during a dial. A certificate is
// observed as its certified key, and Cert describes it.
type Observed struct {
	Hop  string `json:"hop"`     // sshconfig.Target.Label()
	Addr string `json:"address"` // host:port dialled
	Pin
	Cert *CertInfo `json:"certificate,omitempty"`
	// CertPinned says the hop's pin is Cert's own fingerprint, as pins of
	// certificates were kept before their certified key was pinned: the
	// caller migrates it to Pin.
	CertPinned bool `json:"-"`
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

// CAs maps a hop address to the fingerprint of the CA it is trusted
// through: any host key that CA certified for the hop's name.
type CAs map[string]string

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
var defaultHostKeyAlgorithms = append(append([]string{}, certAlgorithms...),
	xssh.KeyAlgoED25519, xssh.KeyAlgoECDSA256, xssh.KeyAlgoECDSA384, xssh.KeyAlgoECDSA521,
	xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256)

// certAlgorithms are the host certificate algorithms, in OpenSSH's order:
// a hop trusted through a CA is offered only these.
var certAlgorithms = []string{xssh.CertAlgoED25519v01, xssh.CertAlgoECDSA256v01, xssh.CertAlgoECDSA384v01,
	xssh.CertAlgoECDSA521v01, xssh.CertAlgoRSASHA512v01, xssh.CertAlgoRSASHA256v01}

// keyAlgorithms are the algorithms that negotiate a key of one type,
// plain first, then as a certificate of it.
var keyAlgorithms = map[string][]string{
	xssh.KeyAlgoED25519:  {xssh.KeyAlgoED25519, xssh.CertAlgoED25519v01},
	xssh.KeyAlgoECDSA256: {xssh.KeyAlgoECDSA256, xssh.CertAlgoECDSA256v01},
	xssh.KeyAlgoECDSA384: {xssh.KeyAlgoECDSA384, xssh.CertAlgoECDSA384v01},
	xssh.KeyAlgoECDSA521: {xssh.KeyAlgoECDSA521, xssh.CertAlgoECDSA521v01},
	xssh.KeyAlgoRSA: {xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA,
		xssh.CertAlgoRSASHA512v01, xssh.CertAlgoRSASHA256v01},
	// Pins recorded as a certificate's own fingerprint: only the
	// certificate can match them (and have them migrated).
	xssh.CertAlgoRSAv01: {xssh.CertAlgoRSASHA512v01, xssh.CertAlgoRSASHA256v01, xssh.CertAlgoRSAv01},
}

// hostKeyAlgorithms restricts negotiation to the pinned key's algorithms so
// that a server with several host keys presents the pinned one (or a
// certificate of it); with nothing pinned it is OpenSSH's order.
func hostKeyAlgorithms(p Pin) []string {
	if p.KeyType == "" {
		return defaultHostKeyAlgorithms
	}
	if a, ok := keyAlgorithms[p.KeyType]; ok {
		return a
	}
	return []string{p.KeyType}
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

// observe is what hop presented: a certificate is pinned by its certified
// key, and described.
func observe(hop *sshconfig.Target, key xssh.PublicKey) Observed {
	o := Observed{Hop: hop.Label(), Addr: hop.Addr(), Pin: PinOf(key)}
	if c, ok := key.(*xssh.Certificate); ok {
		o.Pin, o.Cert = PinOf(c.Key), certInfo(c)
	}
	return o
}

// callback builds the host key check for one hop: the hop's CA when it
// has one, else its pin. Every key is recorded before it is checked, so a
// failure, user authentication's too, still reports it.
func (r *keyRecorder) callback(hop *sshconfig.Target, pin Pin, ca string, mode TrustMode) xssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key xssh.PublicKey) error {
		o := observe(hop, key)
		if ca != "" {
			r.add(o)
			return checkHostCert(key, ca, hop, time.Now())
		}
		// A pin of the certificate's own fingerprint, as kept before
		// certified keys were pinned, still matches: once.
		o.CertPinned = o.Cert != nil && pin.Fingerprint == o.Cert.Fingerprint
		r.add(o)
		switch {
		case o.CertPinned:
			return nil
		case pin.IsZero() && mode == Record:
			return nil
		case pin.IsZero():
			return &TrustRequiredError{Observed: o.Pin}
		case o.Pin != pin:
			return &HostKeyChangedError{Expected: pin, Got: o.Pin}
		}
		return nil
	}
}
