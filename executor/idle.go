package executor

import (
	"context"
	"sort"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// IdleTask is a ready task whose profile sets archive_after: idle since
// its last launch, resume, exec, shell or session end, and archived by
// `sweep` at ArchiveAt.
type IdleTask struct {
	TaskID    string    `json:"task_id"`
	Host      string    `json:"host"`
	Profile   string    `json:"profile"`
	IdleSince time.Time `json:"idle_since"`
	ArchiveAt time.Time `json:"archive_at"`
}

// ArchiveTimes says, of ts, when sweep archives each one it will: ready,
// its profile's archive_after set, and every session of it ended (as
// recorded here).
func (e *Executor) ArchiveTimes(ctx context.Context, ts []*records.Task) (map[string]IdleTask, error) {
	sessions, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return nil, err
	}
	byTask := map[string][]*records.Session{}
	for _, s := range sessions {
		byTask[s.TaskID] = append(byTask[s.TaskID], s)
	}
	out := map[string]IdleTask{}
	for _, t := range ts {
		if t.Phase != records.PhaseReady {
			continue
		}
		p, err := e.profileOf(ctx, t)
		if err != nil || p.ArchiveAfter == "" {
			continue // a profile gone or without archive_after: never
		}
		after, err := time.ParseDuration(p.ArchiveAfter)
		if err != nil {
			continue
		}
		if since, idle := idleSince(t, byTask[t.ID]); idle {
			out[t.ID] = IdleTask{TaskID: t.ID, Host: t.Host, Profile: t.Profile, IdleSince: since, ArchiveAt: since.Add(after)}
		}
	}
	return out, nil
}

// idleSince is the last time anything touched t, or false while one of
// its sessions has not ended.
func idleSince(t *records.Task, ss []*records.Session) (time.Time, bool) {
	since := t.CreatedAt
	later := func(x time.Time) {
		if x.After(since) {
			since = x
		}
	}
	if t.TouchedAt != nil {
		later(*t.TouchedAt)
	}
	for _, s := range ss {
		if !s.State.Ended() || s.EndedAt == nil {
			return time.Time{}, false
		}
		later(s.StartedAt)
		later(*s.EndedAt)
	}
	return since.UTC(), true
}

// ArchiveIdle queues an archive (a cleanup job, due now) for every task
// whose ArchiveAt has come, unless dryRun, and returns them by ID.
func (e *Executor) ArchiveIdle(ctx context.Context, now time.Time, dryRun bool) ([]IdleTask, error) {
	ts, err := e.ListTasks(ctx, "")
	if err != nil {
		return nil, err
	}
	times, err := e.ArchiveTimes(ctx, ts)
	if err != nil {
		return nil, err
	}
	due := []IdleTask{}
	for _, t := range ts {
		it, ok := times[t.ID]
		if !ok || now.Before(it.ArchiveAt) {
			continue
		}
		if !dryRun {
			if _, err := e.ensureJob(ctx, t, records.TriggerArchive); err != nil {
				return due, err
			}
		}
		due = append(due, it)
	}
	sort.Slice(due, func(i, j int) bool { return due[i].TaskID < due[j].TaskID })
	return due, nil
}

// touch records that something ran in t now (exec, shell), which puts
// off its archive_after. Best effort: a task claimed by a teardown
// refuses the write, and is being archived anyway.
func (e *Executor) touch(ctx context.Context, id string) {
	_, _ = records.Mutate(ctx, e.cfg.Store, records.KindTask, id, "task.touched", func(t *records.Task) error {
		now := time.Now().UTC().Truncate(time.Second)
		t.TouchedAt = &now
		return nil
	})
}
