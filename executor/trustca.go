package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// trustThroughCA decides each hop's trust for `host trust
// --ca-fingerprint`: a hop whose key a --fingerprint names is pinned by
// it, a hop already trusted keeps its trust unless Replace (the target
// must be replaced to move it to the CA), and every other hop is trusted
// through the CA. The decision is then proven by a dial that enforces it,
// so a certificate the CA does not vouch for (another CA, expired, not yet
// valid, for another name, revoked) fails it, exit 5, saying why.
func (e *Executor) trustThroughCA(ctx context.Context, t *sshconfig.Target, h *records.Host, o TrustOptions, observed []ssh.Observed) ([]records.HopPin, []TrustChange, error) {
	named, old := setOf(o.Fingerprints), pinsByAddress(h)
	var pins []records.HopPin
	var changes []TrustChange
	for _, obs := range observed {
		ch := TrustChange{Hop: obs.Hop, Address: obs.Addr, New: obs.Pin, Cert: obs.Cert, Action: "pinned"}
		p := records.HopPin{Hop: obs.Hop, Address: obs.Addr, CAFingerprint: o.CAFingerprint}
		if named[obs.Fingerprint] {
			p = records.HopPin{Hop: obs.Hop, Address: obs.Addr, KeyType: obs.KeyType, Fingerprint: obs.Fingerprint}
		} else {
			ch.CAFingerprint = o.CAFingerprint
		}
		if prev, ok := old[obs.Addr]; ok {
			switch {
			case prev == p:
				ch.Action = "unchanged"
			case !o.Replace && obs.Addr == t.Addr():
				return nil, nil, &UsageError{Msg: fmt.Sprintf("%s is trusted by %s already: add --replace to trust it through the CA %s instead",
					obs.Hop, trustLabel(prev), o.CAFingerprint)}
			case !o.Replace:
				p, ch = prev, TrustChange{Hop: obs.Hop, Address: obs.Addr, New: obs.Pin, Cert: obs.Cert, Action: "unchanged",
					CAFingerprint: prev.CAFingerprint}
			default:
				ch.Action = "replaced"
				if prev.CAFingerprint != "" {
					ch.OldCAFingerprint = prev.CAFingerprint
				} else {
					was := pinOf(prev)
					ch.Old = &was
				}
			}
		}
		pins, changes = append(pins, p), append(changes, ch)
	}
	proof := e.dialOptions(&records.Host{Name: h.Name, Pins: pins}, ssh.Enforce)
	c, err := ssh.Dial(ctx, t, proof)
	if err == nil {
		c.Close()
	} else if !isAuthFailure(err) {
		return nil, nil, err
	}
	return pins, changes, nil
}

// trustLabel names what one hop is trusted by, for messages.
func trustLabel(p records.HopPin) string {
	if p.CAFingerprint != "" {
		return "the CA " + p.CAFingerprint
	}
	return "its key " + pinOf(p).String()
}

// isAuthFailure says err is the user's authentication failing: every
// host key was accepted before it.
func isAuthFailure(err error) bool {
	var de *ssh.Error
	return errors.As(err, &de) && de.Class == ssh.ClassAuth
}
