package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/records"
)

// RefreshParallel bounds how many hosts a refresh asks at once.
const RefreshParallel = 8

// SessionView is a session as the lists print it: its record, when its
// state was learned, and why a refresh could not learn it now.
type SessionView struct {
	records.Session
	// StateRecordedAt is when the host last told this state (checked_at),
	// or, never asked since, when the launch or the end recorded it.
	StateRecordedAt time.Time `json:"state_recorded_at"`
	// RefreshError: the host could not be asked; the state is as recorded.
	RefreshError *ErrorView `json:"refresh_error,omitempty"`
	RefreshErr   error      `json:"-"`
	// Asked: a refresh asked the host (or tried to) about this session.
	Asked bool `json:"-"`
	// LogOffset and LogGeneration are where `session logs` stopped
	// printing: read again from there with --offset and --generation.
	LogOffset     *int64 `json:"log_offset,omitempty"`
	LogGeneration string `json:"log_generation,omitempty"`
	// LogSkippedGenerations and LogSkippedBytes: what a follow lost
	// because it fell more than a rotation behind (the bytes as far as
	// the host's controller counts them).
	LogSkippedGenerations int   `json:"log_skipped_generations,omitempty"`
	LogSkippedBytes       int64 `json:"log_skipped_bytes,omitempty"`
}

// ViewOf is s as recorded, unasked.
func ViewOf(s *records.Session) SessionView {
	at := s.StartedAt
	switch {
	case s.CheckedAt != nil:
		at = *s.CheckedAt
	case s.EndedAt != nil:
		at = *s.EndedAt
	}
	return SessionView{Session: *s, StateRecordedAt: at}
}

// Stale: the state may have changed on the host since it was learned, and
// that was more than StaleAfter ago.
func (v *SessionView) Stale(now time.Time) bool {
	return !v.State.Ended() && now.Sub(v.StateRecordedAt) >= StaleAfter
}

// asked: a session the host can tell more about (a lost one may still
// have written down how it ended).
func asked(s *records.Session) bool {
	return (s.State == records.SessionRunning || s.State == records.SessionLost) && s.SessionDir != ""
}

// RefreshSessions asks the hosts of ss, at most RefreshParallel at a
// time, how their sessions are doing (one helper call per host for all
// of its sessions) and records the answers. Launches that were cut short
// are settled first, as `task show` does. It returns the sessions as now
// recorded, in the order given; one whose host could not be asked keeps
// its recorded state and says why (RefreshErr).
func (e *Executor) RefreshSessions(ctx context.Context, ss []*records.Session) []SessionView {
	out := make([]SessionView, len(ss))
	for i, s := range ss {
		out[i] = ViewOf(s)
	}
	e.settleStarting(ctx, out)
	byHost := map[string][]*SessionView{}
	var hosts []string
	for i := range out {
		v := &out[i]
		if v.RefreshErr != nil || !asked(&v.Session) {
			continue
		}
		v.Asked = true
		if byHost[v.Host] == nil {
			hosts = append(hosts, v.Host)
		}
		byHost[v.Host] = append(byHost[v.Host], v)
	}
	sem := make(chan struct{}, RefreshParallel)
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			e.refreshHost(ctx, h, byHost[h])
		}()
	}
	wg.Wait()
	return out
}

// settleStarting settles the launches that left sessions of vs starting
// and were cut short (recovery; one under way is left to its launch),
// then reads those sessions again.
func (e *Executor) settleStarting(ctx context.Context, vs []SessionView) {
	settled := map[string]error{} // by task
	for i := range vs {
		v := &vs[i]
		if v.State != records.SessionStarting {
			continue
		}
		err, seen := settled[v.TaskID]
		if !seen {
			var t *records.Task
			if t, _, err = records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, v.TaskID); err == nil {
				_, _, err = e.RecoverTasks(ctx, []*records.Task{t}, true)
			}
			settled[v.TaskID] = err
		}
		var s *records.Session
		if err == nil {
			s, _, err = records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, v.ID)
		}
		if err != nil {
			v.Asked, v.RefreshErr = true, err
			continue
		}
		*v = ViewOf(s)
		v.Asked = s.State != records.SessionStarting
	}
}

// refreshHost asks host about vs in one helper call, and records what
// it says of each.
func (e *Executor) refreshHost(ctx context.Context, host string, vs []*SessionView) {
	fail := func(err error) {
		ids := make([]string, len(vs))
		for i, v := range vs {
			ids[i] = v.ID
		}
		observed := e.observeUnreachable(ctx, err, ids...)
		for _, v := range vs {
			if s := observed[v.ID]; s != nil {
				*v = ViewOf(s)
				v.Asked = true
			}
			v.RefreshErr = err
		}
	}
	t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, vs[0].TaskID)
	if err != nil {
		fail(err)
		return
	}
	h, _, err := e.getHost(ctx, host)
	if err != nil {
		fail(err)
		return
	}
	hc, err := e.connect(ctx, h)
	if err != nil {
		fail(err)
		return
	}
	defer hc.Close()
	req := protocol.SessionsRequest{Sessions: make([]protocol.SessionRequest, len(vs))}
	for i, v := range vs {
		req.Sessions[i] = protocol.SessionRequest{SessionDir: v.SessionDir, StartTime: v.StartTime}
	}
	var rep protocol.SessionsReport
	err = hc.call(ctx, t.Root, protocol.OpSessionsProbe, req, &rep)
	if err == nil && len(rep.Sessions) != len(vs) {
		err = fmt.Errorf("the helper on %s answered for %d sessions, asked about %d", host, len(rep.Sessions), len(vs))
	}
	if err != nil {
		fail(hc.linkLost(err, "asking about the sessions on "+host, "their states are as recorded",
			"`kandev-exec session ls --refresh` again once the host answers"))
		return
	}
	for i, v := range vs {
		s, err := e.recordReport(ctx, &v.Session, rep.Sessions[i])
		if err != nil {
			v.RefreshErr = err
			continue
		}
		*v = ViewOf(s)
		v.Asked = true
	}
}

// recordReport records what the host reported of s: running while its
// controller proves to be the session's, else how the session ended.
func (e *Executor) recordReport(ctx context.Context, s *records.Session, r protocol.SessionReport) (*records.Session, error) {
	id := r.Identity
	switch {
	case r.Error != "":
		return nil, fmt.Errorf("session %s: the host could not read %s: %s", s.ID, s.SessionDir, r.Error)
	case r.Files == nil:
		return nil, fmt.Errorf("session %s: the host sent nothing of %s", s.ID, s.SessionDir)
	case endedOnHost(*r.Files): // its controller may linger a while after
		return e.recordFinal(ctx, s.ID, *r.Files.Status, "")
	case id.Alive && id.Ours:
		st := controller.Status{State: controller.StateRunning}
		if r.Files.Status != nil {
			st.LogLostBytes = r.Files.Status.LogLostBytes
		}
		return e.recordFinal(ctx, s.ID, st, lostNoEnd)
	case id.Alive && s.StartTime == 0:
		return nil, fmt.Errorf("session %s: controller pid %d is alive but was never recorded as this session's controller; not touching it (check the host: `kandev-exec task exec %s -- ps -p %d`)",
			s.ID, id.PID, s.TaskID, id.PID)
	}
	// Its controller is gone and wrote down no end.
	return e.recordGone(ctx, s.ID, s.TaskID, *r.Files, id.Orphan)
}
