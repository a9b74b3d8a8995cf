package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
)

// HostExistsError is `host add` for a name taken by a host with other
// settings (exit 1): Differ names them as flags.
type HostExistsError struct {
	Name   string
	Differ []string // "--hostname", "--port", ...
}

func (e *HostExistsError) Error() string {
	return fmt.Sprintf("host %q already exists with other settings (%s)", e.Name, strings.Join(e.Differ, ", "))
}

func (e *HostExistsError) Hint() string {
	return fmt.Sprintf("change it with `kandev-exec host set %s` and the same flags (`kandev-exec host show %s` shows it now)", e.Name, e.Name)
}

// specDiff names, as `host add` flags, the settings in which o differs.
func specDiff(h, o *records.Host) []string {
	var out []string
	for _, f := range []struct {
		flag string
		same bool
	}{
		{"--alias", h.Alias == o.Alias},
		{"--hostname", h.HostName == o.HostName},
		{"--port", h.Port == o.Port},
		{"--user", h.User == o.User},
		{"--identity-file", slices.Equal(h.IdentityFiles, o.IdentityFiles)},
		{"--identities-only", h.IdentitiesOnly == o.IdentitiesOnly},
		{"--proxy-jump", h.ProxyJump == o.ProxyJump},
		{"--workdir-root", h.WorkdirRoot == o.WorkdirRoot},
	} {
		if !f.same {
			out = append(out, f.flag)
		}
	}
	return out
}

// HostChanges are the settings `host set` was given; nil leaves one as
// it is. An empty string clears an override, so the ssh config decides
// again (an empty alias means the host's name, an empty root the
// default).
type HostChanges struct {
	Alias, HostName, User, ProxyJump, WorkdirRoot *string
	Port                                          *int
	IdentityFiles                                 *[]string
	IdentitiesOnly                                *bool
}

// HostSetResult is what `host set` did.
type HostSetResult struct {
	Host        HostView
	Changed     []string // as flags, empty when nothing changed
	PinsDropped bool     // the route changed: the host must be trusted again
}

// errSpecChanged: the host's settings changed since SetHost read them.
var errSpecChanged = errors.New("host settings changed concurrently")

// SetHost changes a stored host's settings. When they lead somewhere
// else (the target's address or port, or any jump host's, differs), the
// pinned keys no longer say anything about where a dial goes: they are
// dropped, and `host trust` must pin again. Status and history stay.
func (e *Executor) SetHost(ctx context.Context, name string, c HostChanges) (HostSetResult, error) {
	old, rec, err := e.getHost(ctx, name)
	if err != nil {
		return HostSetResult{}, err
	}
	h := *old
	c.apply(&h)
	changed := specDiff(old, &h)
	if len(changed) == 0 {
		v, err := e.ShowHost(ctx, name)
		return HostSetResult{Host: v, Changed: []string{}}, err
	}
	newT, err := e.resolveSpec(ctx, &h, c.Alias != nil && *c.Alias != "")
	if err != nil {
		return HostSetResult{}, err
	}
	oldT, err := e.resolveHost(ctx, old)
	moved := err != nil || !slices.Equal(route(oldT), route(newT))
	updated, err := records.Mutate(ctx, e.cfg.Store, records.KindHost, name, "host.updated", func(x *records.Host) error {
		if !x.SameSpec(old) {
			return errSpecChanged
		}
		c.apply(x)
		if moved {
			x.Pins, x.TrustedAt = []records.HopPin{}, nil
		}
		return nil
	})
	if errors.Is(err, errSpecChanged) {
		// Another process changed the settings since they were read:
		// this change was made against settings that are gone.
		ce := &state.ConflictError{Kind: records.KindHost, Name: name, Expected: rec.Revision}
		if cur, gerr := e.cfg.Store.Get(ctx, records.KindHost, name); gerr == nil {
			ce.Actual = cur.Revision
		}
		return HostSetResult{}, ce
	}
	if err != nil {
		return HostSetResult{}, err
	}
	e.dropMasters(ctx, name)
	v, err := e.ShowHost(ctx, updated.Name)
	return HostSetResult{Host: v, Changed: changed, PinsDropped: moved && len(old.Pins) > 0}, err
}

func (c HostChanges) apply(h *records.Host) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&h.Alias, c.Alias)
	set(&h.HostName, c.HostName)
	set(&h.User, c.User)
	set(&h.ProxyJump, c.ProxyJump)
	set(&h.WorkdirRoot, c.WorkdirRoot)
	if h.Alias == "" {
		h.Alias = h.Name
	}
	if h.WorkdirRoot == "" {
		h.WorkdirRoot = records.DefaultWorkdirRoot
	}
	if c.Port != nil {
		h.Port = *c.Port
	}
	if c.IdentityFiles != nil {
		h.IdentityFiles = slices.Clone(*c.IdentityFiles)
	}
	if c.IdentitiesOnly != nil {
		h.IdentitiesOnly = *c.IdentitiesOnly
	}
}

// route is the addresses a dial goes through, jump hosts first.
func route(t *sshconfig.Target) []string {
	var out []string
	for _, hop := range t.Hops() {
		out = append(out, hop.Addr())
	}
	return out
}
