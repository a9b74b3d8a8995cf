package executor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
)

// KindHost is the store kind of host records.
const KindHost state.Kind = "host"

// Host statuses. Only admitted hosts take new launches.
const (
	StatusAdmitted    = "admitted"
	StatusCordoned    = "cordoned"
	StatusDraining    = "draining"
	StatusQuarantined = "quarantined"
)

// DefaultWorkdirRoot is where task directories live on a host.
const DefaultWorkdirRoot = "~/.kandev"

// HopPin is the trusted key of one hop (a jump host or the target).
type HopPin struct {
	Hop     string `json:"hop"`     // label at trust time
	Address string `json:"address"` // host:port dialled
	ssh.Pin
}

// Host is a stored host: how to reach it (the alias and explicit settings,
// resolved afresh on every dial like OpenSSH does) and what is trusted.
type Host struct {
	Name           string     `json:"name"`
	Alias          string     `json:"alias"`
	HostName       string     `json:"hostname_override,omitempty"`
	Port           int        `json:"port_override,omitempty"`
	User           string     `json:"user_override,omitempty"`
	IdentityFiles  []string   `json:"identity_files,omitempty"`
	IdentitiesOnly bool       `json:"identities_only,omitempty"`
	ProxyJump      string     `json:"proxy_jump_override,omitempty"`
	WorkdirRoot    string     `json:"workdir_root"`
	Pins           []HopPin   `json:"pins"`
	TrustedAt      *time.Time `json:"trusted_at,omitempty"`
	Status         string     `json:"status"`
	StatusReason   string     `json:"status_reason"`
	StatusBy       string     `json:"status_by"`
	StatusAt       *time.Time `json:"status_at"`
	CreatedAt      time.Time  `json:"created_at"`
}

// TargetPin is the pin of the host itself (the last hop).
func (h *Host) TargetPin(t *ssh.Target) ssh.Pin {
	for _, p := range h.Pins {
		if p.Address == t.Addr() {
			return p.Pin
		}
	}
	return ssh.Pin{}
}

// sameSpec reports whether two hosts are reached the same way.
func (h *Host) sameSpec(o *Host) bool {
	return h.Alias == o.Alias && h.HostName == o.HostName && h.Port == o.Port && h.User == o.User &&
		slices.Equal(h.IdentityFiles, o.IdentityFiles) && h.IdentitiesOnly == o.IdentitiesOnly &&
		h.ProxyJump == o.ProxyJump && h.WorkdirRoot == o.WorkdirRoot
}

func (h *Host) pins() ssh.Pins {
	out := ssh.Pins{}
	for _, p := range h.Pins {
		out[p.Address] = p.Pin
	}
	return out
}

func (h *Host) overrides() ssh.Overrides {
	return ssh.Overrides{HostName: h.HostName, Port: h.Port, User: h.User,
		IdentityFiles: h.IdentityFiles, IdentitiesOnly: h.IdentitiesOnly, ProxyJump: h.ProxyJump}
}

// HostView is the host as `host ls/show --json` prints it (docs/contract.md).
type HostView struct {
	Name         string     `json:"name"`
	Alias        string     `json:"alias"`
	Hostname     string     `json:"hostname"`
	Port         int        `json:"port"`
	User         string     `json:"user"`
	ProxyJump    string     `json:"proxy_jump"`
	WorkdirRoot  string     `json:"workdir_root"`
	Fingerprint  string     `json:"fingerprint"`
	KeyType      string     `json:"key_type"`
	Pins         []HopPin   `json:"pins"`
	Status       string     `json:"status"`
	StatusReason string     `json:"status_reason"`
	StatusBy     string     `json:"status_by"`
	StatusAt     *time.Time `json:"status_at"`
	CreatedAt    time.Time  `json:"created_at"`
	Revision     uint64     `json:"revision"`
	ResolveError string     `json:"resolve_error,omitempty"`
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

// NotFoundError names a missing host (or task, ...) and the command that
// lists what exists.
type NotFoundError struct {
	What, Name, ListCmd string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found (see `kandev-exec %s`)", e.What, e.Name, e.ListCmd)
}

func (e *Executor) getHost(ctx context.Context, name string) (*Host, state.Record, error) {
	return getRecord[Host](ctx, e.cfg.Store, KindHost, name)
}

func (e *Executor) resolveHost(ctx context.Context, h *Host) (*ssh.Target, error) {
	t, err := ssh.Resolve(ctx, h.Alias, h.overrides(), e.resolveOptions())
	if err != nil {
		return nil, &ssh.Error{Host: h.Name, Hop: h.Alias, Class: ssh.ClassConfig, Err: err,
			Hint: fmt.Sprintf("fix the ssh config, or `kandev-exec host rm %s` and add it again", h.Name)}
	}
	return t, nil
}

func (e *Executor) view(ctx context.Context, h *Host, rec state.Record) HostView {
	v := HostView{Name: h.Name, Alias: h.Alias, WorkdirRoot: h.WorkdirRoot, Pins: h.Pins, Status: h.Status,
		StatusReason: h.StatusReason, StatusBy: h.StatusBy, StatusAt: h.StatusAt, CreatedAt: h.CreatedAt,
		Revision: rec.Revision, Hostname: h.HostName, Port: h.Port, User: h.User, ProxyJump: h.ProxyJump}
	if v.Pins == nil {
		v.Pins = []HopPin{}
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		v.ResolveError = err.Error()
		return v
	}
	v.Hostname, v.Port, v.User, v.ProxyJump = t.HostName, t.Port, t.User, t.JumpSpec()
	pin := h.TargetPin(t)
	v.Fingerprint, v.KeyType = pin.Fingerprint, pin.KeyType
	return v
}
