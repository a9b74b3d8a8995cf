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
	Confirm   func(c TrustChange) (bool, error)
}

// TrustChange is what trusting does to one hop's pin.
type TrustChange struct {
	Hop     string   `json:"hop"`
	Address string   `json:"address"`
	Old     *ssh.Pin `json:"old,omitempty"`
	New     ssh.Pin  `json:"new"`
	Action  string   `json:"action"` // pinned, replaced, unchanged
}

// TrustResult is what `host trust` reports.
type TrustResult struct {
	Name        string        `json:"name"`
	Fingerprint string        `json:"fingerprint"`
	KeyType     string        `json:"key_type"`
	Changes     []TrustChange `json:"hops"`
}

// observeForTrust dials recording every hop's key. A server usually has
// several host keys and the client picks one type by default; when the
// user named fingerprints, each unpinned hop whose default key is not one
// of them is dialled again per key type until it presents the named key,
// so the key checked out of band is the one pinned, with its algorithm.
func (e *Executor) observeForTrust(ctx context.Context, t *sshconfig.Target, pins ssh.Pins, o TrustOptions) ([]ssh.Observed, error) {
	opts := ssh.DialOptions{Pins: pins, Mode: ssh.Record, Timeout: e.cfg.ConnectTimeout, Debug: e.cfg.Debug, Host: o.Name,
		Algorithms: map[string][]string{}}
	dial := func() ([]ssh.Observed, error) {
		c, err := ssh.Dial(ctx, t, opts)
		if err != nil {
			return nil, err
		}
		c.Close()
		return c.Observed, nil
	}
	observed, err := dial()
	if err != nil || len(o.Fingerprints) == 0 {
		return observed, err
	}
	named := map[string]bool{}
	for _, f := range o.Fingerprints {
		named[f] = true
	}
	for _, hop := range t.Hops() {
		if !pins[hop.Addr()].IsZero() || named[observedAt(observed, hop.Addr()).Fingerprint] {
			continue
		}
		for _, fam := range ssh.KeyAlgorithmFamilies {
			opts.Algorithms[hop.Addr()] = fam
			if got, err := dial(); err == nil && named[observedAt(got, hop.Addr()).Fingerprint] {
				observed = got
				break
			}
			delete(opts.Algorithms, hop.Addr())
		}
	}
	return observed, nil
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
// and every hop's. An existing pin is never replaced without Replace.
func (e *Executor) TrustHost(ctx context.Context, o TrustOptions) (TrustResult, error) {
	h, rec, err := e.getHost(ctx, o.Name)
	if err != nil {
		return TrustResult{}, err
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return TrustResult{}, err
	}
	pins := hostPins(h)
	if o.Replace {
		pins = ssh.Pins{}
	}
	observed, err := e.observeForTrust(ctx, t, pins, o)
	if err != nil {
		var de *ssh.Error
		if errors.As(err, &de) && de.Class == ssh.ClassHostKey {
			de.Hint = fmt.Sprintf("to accept the new key after checking it out of band: `kandev-exec host trust %s --replace --fingerprint <new>`", o.Name)
		}
		return TrustResult{}, err
	}

	res := TrustResult{Name: o.Name}
	old := hostPins(h)
	var newPins []records.HopPin
	for _, obs := range observed {
		ch := TrustChange{Hop: obs.Hop, Address: obs.Addr, New: obs.Pin, Action: "pinned"}
		if p, ok := old[obs.Addr]; ok {
			ch.Old = &p
			ch.Action = "replaced"
			if p == obs.Pin {
				ch.Action = "unchanged"
			}
		}
		res.Changes = append(res.Changes, ch)
		newPins = append(newPins, records.HopPin{Hop: obs.Hop, Address: obs.Addr, KeyType: obs.Pin.KeyType, Fingerprint: obs.Pin.Fingerprint})
		if obs.Addr == t.Addr() {
			res.Fingerprint, res.KeyType = obs.Fingerprint, obs.KeyType
		}
	}
	if err := confirmChanges(o, res.Changes); err != nil {
		return TrustResult{}, err
	}
	if slices.Equal(newPins, h.Pins) {
		return res, nil
	}
	return res, e.pinHost(ctx, h, rec.Revision, newPins, res.Changes)
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
		if ch.Action == "unchanged" {
			continue
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
