package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/kdlbs/kandev-exec/records"
)

// A host's status says whether it takes new launches (records.Host):
// an operator cordons it, a drain cordons it and stops its sessions, and
// a drain that could not be confirmed quarantines it. Nothing here blocks
// recovery, retries, inspection or teardown: those never look at the
// status. Leaving a quarantine takes a readmit with a fresh probe over
// the pinned keys.

// HostStatusChange is what `host cordon/uncordon/quarantine/readmit`
// print: the host as it is now, whether this command changed it, and for
// readmit the tasks on it that still wait for their cleanup.
type HostStatusChange struct {
	HostView
	Changed  bool               `json:"changed"`
	Previous records.HostStatus `json:"previous_status"`
	Retained []RetainedTask     `json:"retained"`
	Note     string             `json:"-"` // one line for people, when nothing changed
}

// RetainedTask is a task on a host whose teardown is not done: its
// cleanup job keeps retrying whatever the host's status.
type RetainedTask struct {
	TaskID    string           `json:"task_id"`
	Name      string           `json:"name"`
	Phase     records.Phase    `json:"phase"`
	Job       records.JobState `json:"job"`
	Attempts  int              `json:"attempts"`
	NextAt    *time.Time       `json:"next_at,omitempty"`
	LastError string           `json:"last_error,omitempty"`
}

// HostStatusError: the host's status does not allow what was asked (a
// quarantined host is not uncordoned, a cordoned one is not readmitted):
// exit 9, naming the command that applies.
type HostStatusError struct {
	Host   string
	Status records.HostStatus
	Reason string
	Asked  string // "uncordon", "readmit" ...
	Next   string // the command that applies
}

func (e *HostStatusError) Error() string {
	msg := fmt.Sprintf("host %s is %s", e.Host, e.Status)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return fmt.Sprintf("%s: %s does not apply; %s", msg, e.Asked, e.Next)
}

// maxReasonLen bounds a status reason: one line a table can show.
const maxReasonLen = 500

// checkReason refuses an empty reason, or one a table cannot show on one
// line.
func checkReason(flag, reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return &UsageError{Msg: fmt.Sprintf("%s needs a non-empty reason: it is recorded with who and when", flag)}
	case len(reason) > maxReasonLen:
		return &UsageError{Msg: fmt.Sprintf("%s is %d bytes; at most %d", flag, len(reason), maxReasonLen)}
	case strings.IndexFunc(reason, unicode.IsControl) >= 0:
		return &UsageError{Msg: fmt.Sprintf("%s must be one line without control characters", flag)}
	}
	return nil
}

func nowSecond() time.Time { return time.Now().UTC().Truncate(time.Second) }

// CordonHost stops new launches on the host; its sessions keep running.
// Cordoning twice changes nothing (the first reason stays).
func (e *Executor) CordonHost(ctx context.Context, name, reason string) (*HostStatusChange, error) {
	if err := checkReason("--reason", reason); err != nil {
		return nil, err
	}
	return e.changeStatus(ctx, name, "host.cordoned", func(h *records.Host, at time.Time) (string, error) {
		switch h.EffectiveStatus(at) {
		case records.HostCordoned, records.HostDraining:
			return fmt.Sprintf("host %s is already %s: it takes no new launches", h.Name, h.EffectiveStatus(at)), errSettled
		case records.HostQuarantined:
			return "", &HostStatusError{Host: h.Name, Status: records.HostQuarantined, Reason: h.StatusReason, Asked: "cordon",
				Next: fmt.Sprintf("it takes no new launches already; `kandev-exec host readmit %s --reason R` lifts the quarantine once a fresh probe succeeds", h.Name)}
		}
		return "", h.SetStatus(records.HostCordoned, reason, actor("host cordon"), at, nil)
	})
}

// UncordonHost lets the host take launches again; a drain under way
// stops at its next step. A quarantine is not lifted here: that takes a
// readmit and its probe.
func (e *Executor) UncordonHost(ctx context.Context, name string) (*HostStatusChange, error) {
	return e.changeStatus(ctx, name, "host.admitted", func(h *records.Host, at time.Time) (string, error) {
		switch h.EffectiveStatus(at) {
		case records.HostAdmitted:
			return fmt.Sprintf("host %s is not cordoned: it takes launches", h.Name), errSettled
		case records.HostQuarantined:
			return "", &HostStatusError{Host: h.Name, Status: records.HostQuarantined, Reason: h.StatusReason, Asked: "uncordon",
				Next: fmt.Sprintf("a quarantine is lifted by `kandev-exec host readmit %s --reason R`, after a fresh probe", h.Name)}
		}
		return "", h.SetStatus(records.HostAdmitted, "uncordoned", actor("host uncordon"), at, nil)
	})
}

// QuarantineHost blocks new launches on the host until a readmit, or
// until ttl has passed (0: no end). A host already quarantined keeps its
// first reason and end.
func (e *Executor) QuarantineHost(ctx context.Context, name, reason string, ttl time.Duration) (*HostStatusChange, error) {
	if err := checkReason("--reason", reason); err != nil {
		return nil, err
	}
	if ttl < 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("--ttl must be positive, got %s", ttl)}
	}
	return e.changeStatus(ctx, name, "host.quarantined", func(h *records.Host, at time.Time) (string, error) {
		if h.EffectiveStatus(at) == records.HostQuarantined {
			return fmt.Sprintf("host %s is already quarantined since %s by %s", h.Name, h.StatusAt.Format(time.RFC3339), h.StatusBy), errSettled
		}
		var until *time.Time
		if ttl > 0 {
			u := at.Add(ttl)
			until = &u
		}
		return "", h.SetStatus(records.HostQuarantined, reason, actor("host quarantine"), at, until)
	})
}

// ReadmitHost lifts a quarantine once the host answers a fresh probe
// over its pinned keys. The tasks still waiting for their cleanup on it
// are listed, and their jobs that wait for a retry become due now: the
// host answers again.
func (e *Executor) ReadmitHost(ctx context.Context, name, reason string) (*HostStatusChange, error) {
	if err := checkReason("--reason", reason); err != nil {
		return nil, err
	}
	h, _, err := e.getHost(ctx, name)
	if err != nil {
		return nil, err
	}
	switch h.Status {
	case records.HostAdmitted, "":
		return e.unchanged(ctx, h, fmt.Sprintf("host %s is not quarantined: it takes launches", h.Name)), nil
	case records.HostCordoned, records.HostDraining:
		return nil, &HostStatusError{Host: h.Name, Status: h.Status, Reason: h.StatusReason, Asked: "readmit",
			Next: fmt.Sprintf("`kandev-exec host uncordon %s` lets it take launches again", h.Name)}
	}
	if err := e.probeHost(ctx, h); err != nil {
		return nil, fmt.Errorf("host %s stays quarantined: the fresh probe failed: %w", h.Name, err)
	}
	seen := h.StatusAt
	res, err := e.changeStatus(ctx, name, "host.readmitted", func(x *records.Host, at time.Time) (string, error) {
		if x.Status != records.HostQuarantined || !sameTime(x.StatusAt, seen) {
			return "", &HostStatusError{Host: x.Name, Status: x.EffectiveStatus(at), Reason: x.StatusReason, Asked: "this readmit",
				Next: fmt.Sprintf("its status changed while it was probed; `kandev-exec host show %s`, then readmit again if it still applies", x.Name)}
		}
		return "", x.SetStatus(records.HostAdmitted, reason, actor("host readmit"), at, nil)
	})
	if err != nil {
		return nil, err
	}
	if res.Retained, err = e.retainedTasks(ctx, name, true); err != nil {
		return res, err
	}
	return res, nil
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}

// probeHost dials the host enforcing every pinned key and runs a trivial
// command: proof that it answers, as itself.
func (e *Executor) probeHost(ctx context.Context, h *records.Host) error {
	ctx, cancel := withTimeout(ctx, probeTimeout)
	defer cancel()
	hc, err := e.connect(ctx, h)
	if err != nil {
		return err
	}
	defer hc.Close()
	if _, _, err := hc.c.Run(ctx, "true", nil); err != nil {
		return fmt.Errorf("running `true` on %s: %w", h.Name, err)
	}
	return nil
}

// changeStatus applies change to the host record. A change that returns
// errSettled writes nothing, and its note says why.
func (e *Executor) changeStatus(ctx context.Context, name, event string, change func(*records.Host, time.Time) (string, error)) (*HostStatusChange, error) {
	var prev records.HostStatus
	note := ""
	_, err := records.Mutate(ctx, e.cfg.Store, records.KindHost, name, event, func(h *records.Host) error {
		at := nowSecond()
		prev = h.EffectiveStatus(at)
		var err error
		note, err = change(h, at)
		return err
	})
	if err != nil && !errors.Is(err, errSettled) {
		return nil, err
	}
	h, rec, gerr := e.getHost(ctx, name)
	if gerr != nil {
		return nil, gerr
	}
	if err != nil {
		return e.unchanged(ctx, h, note), nil
	}
	return &HostStatusChange{HostView: e.view(ctx, h, rec), Changed: true, Previous: prev, Retained: []RetainedTask{}}, nil
}

func (e *Executor) unchanged(ctx context.Context, h *records.Host, note string) *HostStatusChange {
	_, rec, _ := e.getHost(ctx, h.Name)
	return &HostStatusChange{HostView: e.view(ctx, h, rec), Previous: h.EffectiveStatus(time.Now()), Retained: []RetainedTask{}, Note: note}
}

// retainedTasks lists the tasks on host whose cleanup job has not
// succeeded. With due, the jobs waiting for a retry become due now.
func (e *Executor) retainedTasks(ctx context.Context, host string, due bool) ([]RetainedTask, error) {
	jobs, _, err := records.List[records.CleanupJob](ctx, e.cfg.Store, records.KindJob)
	if err != nil {
		return nil, err
	}
	out := []RetainedTask{}
	for _, j := range jobs {
		if j.Host != host || j.State == records.JobSucceeded {
			continue
		}
		if due && j.State == records.JobRetryWait {
			if x, err := records.Mutate(ctx, e.cfg.Store, records.KindJob, j.ID, "job.pending", func(x *records.CleanupJob) error {
				if x.State != records.JobRetryWait {
					return errSettled
				}
				x.NextAt, x.UpdatedAt = nil, nowSecond()
				return x.Move(records.JobPending)
			}); err == nil {
				j = x
			} else if !errors.Is(err, errSettled) {
				return out, err
			}
		}
		r := RetainedTask{TaskID: j.TaskID, Job: j.State, Attempts: j.Attempts, NextAt: j.NextAt, LastError: j.LastError}
		if t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, j.TaskID); err == nil {
			r.Name, r.Phase = t.Name, t.Phase
		}
		out = append(out, r)
	}
	return out, nil
}

// quarantineHost blocks new launches on the host with the evidence of a
// drain that could not be confirmed. A host already quarantined for good
// keeps its first reason; one quarantined with an end (--ttl) takes the
// evidence instead, without the end: evidence holds until a readmit.
// Failing to record it is reported, never fatal: the drain's outcome
// already keeps the directory.
func (e *Executor) quarantineHost(ctx context.Context, host, reason, by string) {
	_, _ = records.Mutate(context.WithoutCancel(ctx), e.cfg.Store, records.KindHost, host, "host.quarantined", func(h *records.Host) error {
		at := nowSecond()
		if h.EffectiveStatus(at) != records.HostQuarantined {
			return h.SetStatus(records.HostQuarantined, reason, by, at, nil)
		}
		if h.StatusUntil == nil {
			return errSettled
		}
		return h.SetStatus(records.HostQuarantined, reason, by, at, nil)
	})
}
