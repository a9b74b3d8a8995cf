package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
)

// targetTrust is what is trusted of the host itself (the last hop).
func targetTrust(h *records.Host, t *sshconfig.Target) records.HopPin {
	for _, p := range h.Pins {
		if p.Address == t.Addr() {
			return p
		}
	}
	return records.HopPin{}
}

func pinOf(p records.HopPin) ssh.Pin { return ssh.Pin{KeyType: p.KeyType, Fingerprint: p.Fingerprint} }

// hostPins are the hops trusted by one key.
func hostPins(h *records.Host) ssh.Pins {
	out := ssh.Pins{}
	for _, p := range h.Pins {
		if p.CAFingerprint == "" {
			out[p.Address] = pinOf(p)
		}
	}
	return out
}

// hostCAs are the hops trusted through a CA.
func hostCAs(h *records.Host) ssh.CAs {
	out := ssh.CAs{}
	for _, p := range h.Pins {
		if p.CAFingerprint != "" {
			out[p.Address] = p.CAFingerprint
		}
	}
	return out
}

// dialOptions are those of every dial of h in mode: what it trusts, and
// this command's timeout, diagnostics and passphrase prompt.
func (e *Executor) dialOptions(h *records.Host, mode ssh.TrustMode) ssh.DialOptions {
	return ssh.DialOptions{Pins: hostPins(h), CAs: hostCAs(h), Mode: mode, Timeout: e.cfg.ConnectTimeout, Debug: e.cfg.Debug,
		Host: h.Name, Unlocker: e.unlock}
}

// trustKind names what a host is trusted by: "pin" (one key), "ca" (the
// keys a CA certified) or "none".
func trustKind(p records.HopPin) string {
	switch {
	case p.CAFingerprint != "":
		return "ca"
	case p.Fingerprint != "":
		return "pin"
	}
	return "none"
}

func hostOverrides(h *records.Host) sshconfig.Overrides {
	return sshconfig.Overrides{HostName: h.HostName, Port: h.Port, User: h.User,
		IdentityFiles: h.IdentityFiles, IdentitiesOnly: h.IdentitiesOnly, ProxyJump: h.ProxyJump}
}

// HostView is the host as `host ls/show --json` prints it (docs/contract.md).
type HostView struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Hostname    string `json:"hostname"`
	Port        int    `json:"port"`
	User        string `json:"user"`
	ProxyJump   string `json:"proxy_jump"`
	WorkdirRoot string `json:"workdir_root"`
	Fingerprint string `json:"fingerprint"`
	KeyType     string `json:"key_type"`
	// Trust is what the host itself is trusted by: "pin", "ca" (then
	// CAFingerprint names the CA) or "none".
	Trust         string           `json:"trust"`
	CAFingerprint string           `json:"ca_fingerprint"`
	Pins          []records.HopPin `json:"pins"`
	Status        string           `json:"status"`
	StatusReason  string           `json:"status_reason"`
	StatusBy      string           `json:"status_by"`
	StatusAt      *time.Time       `json:"status_at"`
	// StatusUntil ends a quarantine given with --ttl (null: no end); once
	// past, the status is admitted again.
	StatusUntil *time.Time `json:"status_until"`
	// Drain is the host's last drain, while one runs and after it ended.
	Drain        *records.HostDrain `json:"drain,omitempty"`
	CreatedAt    time.Time          `json:"created_at"`
	Revision     uint64             `json:"revision"`
	ResolveError string             `json:"resolve_error,omitempty"`
	// ProxyJumpHops are the jump hosts as resolved, first hop first.
	ProxyJumpHops []JumpHop `json:"proxy_jump_hops"`
}

// JumpHop is one resolved ProxyJump hop: the name as the chain names it
// and where it leads.
type JumpHop struct {
	Name     string `json:"name"`
	User     string `json:"user"`
	Hostname string `json:"hostname"`
	Port     int    `json:"port"`
	// Destination is user@host:port, as ssh and ProxyJump write it.
	Destination string `json:"destination"`
}

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateHostName checks a host record name.
func ValidateHostName(name string) error {
	if !hostNameRE.MatchString(name) {
		return fmt.Errorf("invalid host name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", name)
	}
	return nil
}

// ValidateWorkdirRoot accepts ~, ~/... or an absolute path.
func ValidateWorkdirRoot(r string) error {
	if r == "~" || strings.HasPrefix(r, "~/") || strings.HasPrefix(r, "/") {
		if strings.Contains(r, "/../") || strings.HasSuffix(r, "/..") || strings.ContainsAny(r, "\n\x00") {
			return fmt.Errorf("invalid workdir root %q: no '..' segments", r)
		}
		return nil
	}
	return fmt.Errorf("invalid workdir root %q: use ~, ~/... or an absolute path", r)
}

func (e *Executor) getHost(ctx context.Context, name string) (*records.Host, state.Record, error) {
	return records.Get[records.Host](ctx, e.cfg.Store, records.KindHost, name)
}

func (e *Executor) resolveHost(ctx context.Context, h *records.Host) (*sshconfig.Target, error) {
	return e.resolveHostWith(ctx, h, e.resolveOptions())
}

func (e *Executor) resolveHostWith(ctx context.Context, h *records.Host, opts sshconfig.ResolveOptions) (*sshconfig.Target, error) {
	t, err := sshconfig.Resolve(ctx, h.Alias, hostOverrides(h), opts)
	if err != nil {
		return nil, &ssh.Error{Host: h.Name, Hop: h.Alias, Class: ssh.ClassConfig, Err: err,
			Hint: fmt.Sprintf("fix the ssh config, or `kandev-exec host rm %s` and add it again", h.Name)}
	}
	return t, nil
}

func (e *Executor) view(ctx context.Context, h *records.Host, rec state.Record) HostView {
	return e.viewWith(ctx, h, rec, e.resolveOptions())
}

// viewWith is view resolving with opts (a listing shares one lookup cache).
func (e *Executor) viewWith(ctx context.Context, h *records.Host, rec state.Record, opts sshconfig.ResolveOptions) HostView {
	// A quarantine whose --ttl ran out is over: the status says so.
	v := HostView{Name: h.Name, Alias: h.Alias, WorkdirRoot: h.WorkdirRoot, Pins: h.Pins, Status: string(h.EffectiveStatus(time.Now())),
		StatusReason: h.StatusReason, StatusBy: h.StatusBy, StatusAt: h.StatusAt, CreatedAt: h.CreatedAt, Drain: h.Drain,
		Revision: rec.Revision, Hostname: h.HostName, Port: h.Port, User: h.User, ProxyJump: h.ProxyJump}
	if v.Pins == nil {
		v.Pins = []records.HopPin{}
	}
	v.StatusUntil = h.StatusUntil
	v.ProxyJumpHops = []JumpHop{}
	t, err := e.resolveHostWith(ctx, h, opts)
	if err != nil {
		v.ResolveError = err.Error()
		return v
	}
	v.Hostname, v.Port, v.User, v.ProxyJump = t.HostName, t.Port, t.User, t.JumpSpec()
	for _, j := range t.Jumps {
		v.ProxyJumpHops = append(v.ProxyJumpHops, JumpHop{Name: j.Name, User: j.User, Hostname: j.HostName, Port: j.Port,
			Destination: j.User + "@" + j.Addr()})
	}
	tr := targetTrust(h, t)
	v.Fingerprint, v.KeyType, v.Trust, v.CAFingerprint = tr.Fingerprint, tr.KeyType, trustKind(tr), tr.CAFingerprint
	return v
}

// migrateCertPins rewrites the pins kept as a host certificate's own
// fingerprint, which every renewal changes, to the key it certifies, once
// a dial has seen that certificate again. A failure leaves the old pin,
// which still matches: the next dial tries again.
func (e *Executor) migrateCertPins(ctx context.Context, h *records.Host, observed []ssh.Observed) {
	var seen []ssh.Observed
	for _, o := range observed {
		if o.CertPinned {
			seen = append(seen, o)
		}
	}
	if len(seen) == 0 {
		return
	}
	detail, _ := json.Marshal(seen)
	_, _ = records.MutateEvent(ctx, e.cfg.Store, records.KindHost, h.Name, state.Event{Type: "host.pin_migrated", Detail: detail}, func(cur *records.Host) error {
		changed := false
		for i, p := range cur.Pins {
			for _, o := range seen {
				if p.Address == o.Addr && p.Fingerprint == o.Cert.Fingerprint {
					cur.Pins[i].KeyType, cur.Pins[i].Fingerprint, changed = o.KeyType, o.Fingerprint, true
				}
			}
		}
		if !changed {
			return errNoMigration
		}
		return nil
	})
}

// errNoMigration: the pins changed meanwhile; nothing is left to migrate.
var errNoMigration = errors.New("no pin to migrate")
