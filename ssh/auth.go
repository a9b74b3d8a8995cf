package ssh

import (
	"bytes"
	"errors"
	"os"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// authPlan is the ordered list of signers to offer one hop, plus what was
// skipped and why, so an auth failure can say what to do.
type authPlan struct {
	signers []xssh.Signer
	locked  []string // passphrase-protected identity files no agent holds, with no one to ask
	agent   agentState
	none    *NoIdentitiesError
	closer  func()
}

// identity is one IdentityFile as it can be used: its public key, and
// what signs with it: nil for a .pub the agent holds only certificates
// of, or a locked key with no one to ask for its passphrase.
type identity struct {
	path   string
	pub    xssh.PublicKey
	signer xssh.Signer
	asks   bool // signing asks for its passphrase
	locked bool
}

// planAuth follows OpenSSH: the CertificateFiles, then each identity file
// in config order with the certificates of its key (the -cert.pub beside
// it, and any the agent holds), through the agent when it holds the key
// so no passphrase is needed; then the other agent keys unless
// IdentitiesOnly, which keeps a full agent from exhausting the server's
// MaxAuthTries. Keys that would ask for a passphrase go last, so a key
// that needs none is tried before anyone is asked.
func planAuth(t *sshconfig.Target, unlock *Unlocker, deadline *hopDeadline) *authPlan {
	p := &authPlan{agent: openAgent(t.IdentityAgent)}
	p.closer = p.agent.close
	agentKeys := map[string]xssh.Signer{}
	var agentCerts []*xssh.Certificate
	for _, s := range p.agent.signers {
		agentKeys[keyBytes(s.PublicKey())] = s
		if c := asCert(s.PublicKey()); c != nil {
			agentCerts = append(agentCerts, c)
		}
	}
	var ids []identity
	for _, path := range t.IdentityFiles {
		id, ok := loadIdentity(path, agentKeys, unlock, deadline)
		if !ok {
			continue
		}
		if id.locked {
			p.locked = append(p.locked, path)
		}
		ids = append(ids, id)
	}
	// signerOf is what signs for key: the agent's copy, else a file's.
	signerOf := func(key xssh.PublicKey) (xssh.Signer, bool) {
		if s, ok := agentKeys[keyBytes(key)]; ok {
			return s, false
		}
		for _, id := range ids {
			if id.signer != nil && keyBytes(id.pub) == keyBytes(key) {
				return id.signer, id.asks
			}
		}
		return nil, false
	}
	var now, later []xssh.Signer
	offer := func(s xssh.Signer, asks bool) {
		if asks {
			later = append(later, s)
		} else {
			now = append(now, s)
		}
	}
	offerCert := func(c *xssh.Certificate) {
		if base, asks := signerOf(c.Key); base != nil && c.CertType == xssh.UserCert {
			if s, err := xssh.NewCertSigner(c, base); err == nil {
				offer(s, asks)
			}
		}
	}
	for _, path := range t.CertificateFiles {
		if c := asCert(readPublicKey(path)); c != nil {
			offerCert(c)
		}
	}
	for _, id := range ids {
		if c := asCert(readPublicKey(id.path + "-cert.pub")); c != nil {
			offerCert(c)
		}
		for _, c := range agentCerts {
			if keyBytes(c.Key) == keyBytes(id.pub) {
				offer(agentKeys[keyBytes(c)], false)
			}
		}
		if id.signer != nil {
			offer(id.signer, id.asks)
		}
	}
	if !t.IdentitiesOnly {
		now = append(now, p.agent.signers...)
	}
	used := map[string]bool{}
	for _, s := range append(now, later...) {
		if k := keyBytes(s.PublicKey()); !used[k] {
			used[k] = true
			p.signers = append(p.signers, s)
		}
	}
	if len(p.signers) == 0 && len(p.locked) == 0 {
		p.none = &NoIdentitiesError{Tried: t.IdentityFiles, Agent: p.agent.describe("ssh-agent holds none of them")}
	}
	return p
}

// loadIdentity turns one IdentityFile into an identity, preferring the
// agent's copy of the key. Like OpenSSH it skips what it cannot use (a
// missing file, a key type it does not handle: ok is false) instead of
// failing the dial; a .pub file names a key the agent holds, or holds
// certificates of. A passphrase-protected key the agent does not hold
// asks for its passphrase when unlock can, and is locked otherwise.
func loadIdentity(path string, agentKeys map[string]xssh.Signer, unlock *Unlocker, deadline *hopDeadline) (id identity, ok bool) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return id, false
	}
	id.path = path
	if id.pub = parsePublicKey(pem); id.pub != nil {
		id.signer = agentKeys[keyBytes(id.pub)]
		return id, true
	}
	signer, err := xssh.ParsePrivateKey(pem)
	var missing *xssh.PassphraseMissingError
	switch {
	case err == nil:
		id.pub, id.signer = signer.PublicKey(), signer
	case errors.As(err, &missing):
		if id.pub = missing.PublicKey; id.pub == nil {
			id.pub = readPublicKey(path + ".pub")
		}
		if id.pub == nil {
			id.locked = true // and nothing says which key it is
			return id, true
		}
		if unlock.canAsk() {
			id.signer, id.asks = &lockedKey{path: path, pem: pem, pub: id.pub, unlock: unlock, deadline: deadline}, true
		} else {
			id.locked = true
		}
	default:
		return id, false
	}
	if s, held := agentKeys[keyBytes(id.pub)]; held {
		id.signer, id.asks, id.locked = s, false, false
	}
	return id, true
}

// asCert is k as a certificate, nil when it is a plain key.
func asCert(k xssh.PublicKey) *xssh.Certificate {
	c, _ := k.(*xssh.Certificate)
	if c == nil && k != nil {
		// An agent's key is its own type: parse its wire form.
		if parsed, err := xssh.ParsePublicKey(k.Marshal()); err == nil {
			c, _ = parsed.(*xssh.Certificate)
		}
	}
	return c
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

// parsePublicKey reads an authorized_keys-style public key or
// certificate, nil if b is anything else.
func parsePublicKey(b []byte) xssh.PublicKey {
	k, _, _, _, err := xssh.ParseAuthorizedKey(bytes.TrimSpace(b))
	if err != nil {
		return nil
	}
	return k
}
