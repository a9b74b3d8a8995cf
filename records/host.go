package records

import (
	"slices"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// KindHost is the store kind of host records.
const KindHost state.Kind = "host"

// HostStatus says whether a host takes new launches. Only admitted hosts
// do; no status ever blocks recovery, retries, inspection or teardown.
type HostStatus string

const (
	HostAdmitted    HostStatus = "admitted"
	HostCordoned    HostStatus = "cordoned"    // by an operator: no new launches
	HostDraining    HostStatus = "draining"    // cordoned, and its sessions are being stopped
	HostQuarantined HostStatus = "quarantined" // a drain could not be confirmed, or an operator said so
)

// HostStatuses lists every status, in the order they are explained.
var HostStatuses = []HostStatus{HostAdmitted, HostCordoned, HostDraining, HostQuarantined}

// hostMoves: quarantine is reachable from anywhere (evidence can arrive at
// any time); leaving it takes a readmit.
var hostMoves = moves[HostStatus]{
	HostAdmitted:    {HostCordoned, HostDraining, HostQuarantined},
	HostCordoned:    {HostAdmitted, HostDraining, HostQuarantined},
	HostDraining:    {HostAdmitted, HostCordoned, HostQuarantined},
	HostQuarantined: {HostAdmitted},
}

// CanMove reports whether the table allows s -> to.
func (s HostStatus) CanMove(to HostStatus) bool { return hostMoves.allowed(s, to) }

// DefaultWorkdirRoot is where task directories live on a host.
const DefaultWorkdirRoot = "~/.kandev"

// HopPin is what is trusted of one hop (a jump host or the target): one
// key, or, with CAFingerprint, any host key that CA certified for the
// hop's name (KeyType and Fingerprint are then empty).
type HopPin struct {
	Hop           string `json:"hop"`     // label at trust time
	Address       string `json:"address"` // host:port dialled
	KeyType       string `json:"key_type"`
	Fingerprint   string `json:"fingerprint"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
}

// Host is a stored host: how to reach it (an ssh_config alias and
// explicit settings, resolved afresh on every dial as OpenSSH does), what
// is trusted, and whether it takes launches.
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
	Platform       string     `json:"platform,omitempty"` // os/arch last seen, for choosing the helper before asking
	Status         HostStatus `json:"status"`
	StatusReason   string     `json:"status_reason"`
	StatusBy       string     `json:"status_by"`
	StatusAt       *time.Time `json:"status_at"`
	// StatusUntil ends a quarantine given with a TTL; past it the host is
	// admitted again (EffectiveStatus), and the next write records that.
	StatusUntil *time.Time `json:"status_until,omitempty"`
	// Drain is where the host's last `host drain` stands (nil: never
	// drained), kept here so that host show and a live view read one
	// record.
	Drain     *HostDrain `json:"drain,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// DrainState is where a host drain stands.
type DrainState string

const (
	DrainRunning   DrainState = "running"   // a worker is stopping the host's sessions
	DrainComplete  DrainState = "complete"  // every session stopped; the host stays cordoned
	DrainDeadline  DrainState = "deadline"  // the deadline passed with sessions still running
	DrainCancelled DrainState = "cancelled" // the host was uncordoned (or readmitted) meanwhile
	DrainFailed    DrainState = "failed"    // the worker ended on an error (Last says which)
)

// HostDrain is one drain of a host: cordon, then stop every session
// gracefully (resumable: the task directories stay), until none runs or
// the deadline passes.
type HostDrain struct {
	State     DrainState `json:"state"`
	StartedAt time.Time  `json:"started_at"`
	Deadline  time.Time  `json:"deadline"`
	By        string     `json:"by"`
	// Log is the worker's log on the machine that started the drain, and
	// LogOffset where this drain's lines start in it.
	Log       string      `json:"log"`
	LogOffset int64       `json:"log_offset"`
	WorkerPID int         `json:"worker_pid,omitempty"`
	Stopped   []string    `json:"stopped"`   // sessions this drain stopped
	Remaining []DrainLeft `json:"remaining"` // sessions still running when last looked at
	Last      string      `json:"last"`      // the last step, one line for people
	EndedAt   *time.Time  `json:"ended_at,omitempty"`
}

// DrainLeft is a session a drain has not stopped yet, and why.
type DrainLeft struct {
	Session string `json:"session"`
	TaskID  string `json:"task_id"`
	Why     string `json:"why"`
}

// EffectiveStatus is the status at now: a quarantine whose TTL has run
// out is over.
func (h *Host) EffectiveStatus(now time.Time) HostStatus {
	if h.Status == HostQuarantined && h.StatusUntil != nil && !now.Before(*h.StatusUntil) {
		return HostAdmitted
	}
	if h.Status == "" {
		return HostAdmitted
	}
	return h.Status
}

// SetStatus moves the host to s, recording why, by whom and when; until
// bounds a quarantine (nil: until readmitted).
func (h *Host) SetStatus(s HostStatus, reason, by string, at time.Time, until *time.Time) error {
	if err := checkMove(hostMoves, "host", h.Name, h.EffectiveStatus(at), s); err != nil {
		return err
	}
	h.Status, h.StatusReason, h.StatusBy, h.StatusUntil = s, reason, by, until
	h.StatusAt = &at
	return nil
}

// SameSpec reports whether two hosts are reached the same way.
func (h *Host) SameSpec(o *Host) bool {
	return h.Alias == o.Alias && h.HostName == o.HostName && h.Port == o.Port && h.User == o.User &&
		slices.Equal(h.IdentityFiles, o.IdentityFiles) && h.IdentitiesOnly == o.IdentitiesOnly &&
		h.ProxyJump == o.ProxyJump && h.WorkdirRoot == o.WorkdirRoot
}

// KindHostDrain is the store kind of a host's drain worker record: one
// per host ever drained, whose claim the worker running its drain holds
// (on whichever machine, so two operators never drain a host at once).
// The record itself only names the host.
const KindHostDrain state.Kind = "hostdrain"

// HostDrainWorker is a KindHostDrain record.
type HostDrainWorker struct {
	Name string `json:"name"` // the host
}
