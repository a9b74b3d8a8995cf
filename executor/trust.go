package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
)

// TrustOptions drive `host trust`. Every key not pinned yet (or, with
// Replace, changed) must be confirmed: by Fingerprints, by AcceptNew, or
// by Confirm (nil when there is no terminal). A general "yes" is never
// one of them.
type TrustOptions struct {
	Name         string
	Fingerprints []string
	// AcceptNew pins whatever key each hop presents now, unchecked: trust
	// on first use, which pins whoever answers this connection.
	AcceptNew bool
	Replace   bool
	// CAFingerprint trusts the host, and each hop not trusted yet,
	// through that CA instead of one key: any host key it certified for
	// the hop's own name. It needs no confirmation: it is one.
	CAFingerprint string
	Confirm       func(c TrustChange) (bool, error)
}

// TrustChange is what trusting does to one hop's pin. New is the key the
// hop presents; with CAFingerprint the hop is trusted through that CA
// rather than by New alone (Cert is the certificate it presented).
type TrustChange struct {
	Hop     string   `json:"hop"`
	Address string   `json:"address"`
	Old     *ssh.Pin `json:"old,omitempty"`
	// OldCAFingerprint is the CA the hop was trusted through before.
	OldCAFingerprint string        `json:"old_ca_fingerprint,omitempty"`
	New              ssh.Pin       `json:"new"`
	CAFingerprint    string        `json:"ca_fingerprint,omitempty"`
	Cert             *ssh.CertInfo `json:"certificate,omitempty"`
	Action           string        `json:"action"` // pinned, replaced, unchanged
}

// TrustResult is what `host trust` reports.
type TrustResult struct {
	Name          string        `json:"name"`
	Fingerprint   string        `json:"fingerprint"`
	KeyType       string        `json:"key_type"`
	CAFingerprint string        `json:"ca_fingerprint,omitempty"`
	Changes       []TrustChange `json:"hops"`
}

// observeForTrust dials recording every hop's key. A server usually has
// several host keys and the client picks one type by default; when the
// user named fingerprints, each unpinned hop whose default key is not one
// of them is dialled again per key type until it presents the named key,
// so the key checked out of band is the one pinned, with its algorithm.
// A key is checked before the user authenticates: when authentication
// fails after every key was seen, they are returned with authErr.
func (e *Executor) observeForTrust(ctx context.Context, t *sshconfig.Target, opts ssh.DialOptions, o TrustOptions) (observed []ssh.Observed, authErr, err error) {
	opts.Algorithms = map[string][]string{}
	dial := func() ([]ssh.Observed, error) {
		c, err := ssh.Dial(ctx, t, opts)
		if err == nil {
			c.Close()
			return c.Observed, nil
		}
		var de *ssh.Error
		if errors.As(err, &de) && de.Class == ssh.ClassAuth && len(de.Observed) > 0 {
			return de.Observed, err
		}
		return nil, err
	}
	observed, err = dial()
	if observed == nil {
		return nil, nil, err
	}
	authErr = err
	named := setOf(o.Fingerprints)
	for _, hop := range t.Hops() {
		if len(named) == 0 || !opts.Pins[hop.Addr()].IsZero() || named[observedAt(observed, hop.Addr()).Fingerprint] {
			continue
		}
		for _, fam := range ssh.KeyAlgorithmFamilies {
			opts.Algorithms[hop.Addr()] = fam
			if got, err := dial(); got != nil && named[observedAt(got, hop.Addr()).Fingerprint] {
				observed, authErr = got, err
				break
			}
			delete(opts.Algorithms, hop.Addr())
		}
	}
	return observed, authErr, nil
}

// pinsByAddress is what h trusts of each hop, by address.
func pinsByAddress(h *records.Host) map[string]records.HopPin {
	out := map[string]records.HopPin{}
	for _, p := range h.Pins {
		out[p.Address] = p
	}
	return out
}

func setOf(xs []string) map[string]bool {
	out := map[string]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}

func observedAt(obs []ssh.Observed, addr string) ssh.Observed {
	for _, o := range obs {
		if o.Addr == addr {
			return o
		}
	}
	return ssh.Observed{}
}

// ErrTrustDeclined is returned when the user answers no.
var ErrTrustDeclined = errors.New("host key not trusted: declined")

// TrustHost dials the host (recording keys), then pins the target's key
// and every hop's, or trusts them through a CA. An existing pin is never
// replaced without Replace. Keys seen before user authentication failed
// are still pinned, and the failure returned with the result.
func (e *Executor) TrustHost(ctx context.Context, o TrustOptions) (TrustResult, error) {
	h, rec, err := e.getHost(ctx, o.Name)
	if err != nil {
		return TrustResult{}, err
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return TrustResult{}, err
	}
	opts := e.dialOptions(h, ssh.Record)
	if o.Replace {
		opts.Pins, opts.CAs = ssh.Pins{}, ssh.CAs{}
	}
	observed, authErr, err := e.observeForTrust(ctx, t, opts, o)
	if err != nil {
		var de *ssh.Error
		if errors.As(err, &de) && de.Class == ssh.ClassHostKey {
			de.Hint = fmt.Sprintf("to accept the new key after checking it out of band: `kandev-exec host trust %s --replace --fingerprint <new>`", o.Name)
		}
		return TrustResult{}, err
	}
	res := TrustResult{Name: o.Name, CAFingerprint: o.CAFingerprint}
	var newPins []records.HopPin
	if o.CAFingerprint != "" {
		newPins, res.Changes, err = e.trustThroughCA(ctx, t, h, o, observed)
		if err != nil {
			return TrustResult{}, err
		}
	} else {
		newPins, res.Changes = pinChanges(h, observed, o.Replace)
	}
	if obs := observedAt(observed, t.Addr()); obs.Addr != "" {
		res.Fingerprint, res.KeyType = obs.Fingerprint, obs.KeyType
	}
	if err := confirmChanges(o, res.Changes); err != nil {
		return TrustResult{}, err
	}
	changed := !slices.Equal(newPins, h.Pins)
	if changed {
		if err := e.pinHost(ctx, h, rec.Revision, newPins, res.Changes); err != nil {
			return TrustResult{}, err
		}
	}
	if changed || o.Replace {
		// A connection kept for reuse was dialled under the old trust.
		e.dropMasters(ctx, o.Name)
	}
	return res, authErr
}

// pinChanges pins every hop's key as observed. A pin kept as a host
// certificate's own fingerprint becomes its key's, unchanged; a hop
// trusted through a CA stays so unless replace.
func pinChanges(h *records.Host, observed []ssh.Observed, replace bool) ([]records.HopPin, []TrustChange) {
	old := pinsByAddress(h)
	var pins []records.HopPin
	var changes []TrustChange
	for _, obs := range observed {
		ch := TrustChange{Hop: obs.Hop, Address: obs.Addr, New: obs.Pin, Cert: obs.Cert, Action: "pinned"}
		if p, ok := old[obs.Addr]; ok {
			ch.Action = "replaced"
			if p.CAFingerprint != "" {
				ch.OldCAFingerprint = p.CAFingerprint
				if !replace {
					ch.Action, ch.CAFingerprint = "unchanged", p.CAFingerprint
					changes, pins = append(changes, ch), append(pins, p)
					continue
				}
			} else {
				prev := pinOf(p)
				ch.Old = &prev
				if prev == obs.Pin || obs.CertPinned {
					ch.Action = "unchanged"
				}
			}
		}
		changes = append(changes, ch)
		pins = append(pins, records.HopPin{Hop: obs.Hop, Address: obs.Addr, KeyType: obs.Pin.KeyType, Fingerprint: obs.Pin.Fingerprint})
	}
	return pins, changes
}

// pinHost writes pins on h, the host as read at revision rev before the
// dial, journaling the changes. It pins only the host that was dialled:
// any write since changed it, and a host removed and added again starts
// again at revision 1, so its content is compared.
func (e *Executor) pinHost(ctx context.Context, h *records.Host, rev uint64, pins []records.HopPin, changes []TrustChange) error {
	now := time.Now().UTC().Truncate(time.Second)
	detail, _ := json.Marshal(changes)
	_, err := records.MutateEvent(ctx, e.cfg.Store, records.KindHost, h.Name, state.Event{Type: "host.trusted", Detail: detail}, func(cur *records.Host) error {
		if !reflect.DeepEqual(cur, h) {
			return errHostChanged
		}
		cur.Pins, cur.TrustedAt = pins, &now
		return nil
	})
	if !errors.Is(err, errHostChanged) {
		return err
	}
	_, curRec, err := e.getHost(ctx, h.Name)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w; run `kandev-exec host trust %s` again",
		&state.ConflictError{Kind: records.KindHost, Name: h.Name, Expected: rev, Actual: curRec.Revision}, h.Name)
}

// errHostChanged: the host record changed while `host trust` dialled it.
var errHostChanged = errors.New("the host changed during the dial")

func confirmChanges(o TrustOptions, changes []TrustChange) error {
	given := map[string]bool{}
	for _, f := range o.Fingerprints {
		given[f] = false
	}
	for _, ch := range changes {
		if _, ok := given[ch.New.Fingerprint]; ok {
			given[ch.New.Fingerprint] = true
		}
	}
	for f, seen := range given {
		if !seen {
			var keys []string
			for _, ch := range changes {
				keys = append(keys, ch.Hop+" presents "+ch.New.String())
			}
			return &ssh.Error{Host: o.Name, Hop: changes[len(changes)-1].Hop, Class: ssh.ClassHostKey,
				Err:  &FingerprintMismatchError{Want: f, Seen: keys},
				Hint: "the host does not present the key you were given: do not trust it until you know why"}
		}
	}
	for _, ch := range changes {
		if ch.Action == "unchanged" || ch.CAFingerprint != "" {
			continue // a CA's fingerprint given is its confirmation
		}
		switch {
		case len(o.Fingerprints) > 0:
			if !given[ch.New.Fingerprint] {
				return &UsageError{Msg: fmt.Sprintf("%s presents %s, which no --fingerprint names: check it out of band, then add `--fingerprint %s`",
					ch.Hop, ch.New, ch.New.Fingerprint)}
			}
		case o.AcceptNew:
		case o.Confirm != nil:
			ok, err := o.Confirm(ch)
			if err != nil {
				return err
			}
			if !ok {
				return ErrTrustDeclined
			}
		default:
			return &UsageError{Msg: fmt.Sprintf("%s: pinning %s needs --fingerprint or --accept-new when not running interactively", ch.Hop, ch.New)}
		}
	}
	return nil
}

// FingerprintMismatchError: no hop presents a key the user named (exit 5:
// the host's identity is not the expected one).
type FingerprintMismatchError struct {
	Want string
	Seen []string
}

func (e *FingerprintMismatchError) Error() string {
	return fmt.Sprintf("no host key matches --fingerprint %s (%s)", e.Want, strings.Join(e.Seen, "; "))
}
