package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// t0 is the frozen "now" of every test view: countdowns are computed
// from it, so goldens never depend on the wall clock.
var t0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { v := t0.Add(d); return &v }

// newStore opens a store whose clock advances one second per reading,
// starting ten minutes before t0: journal times are the same on every run.
func newStore(t testing.TB) *state.FileStore {
	t.Helper()
	var mu sync.Mutex
	tick := t0.Add(-10 * time.Minute)
	st, err := state.Open(t.TempDir(), state.Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Second)
		return tick
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// put creates or replaces a record, journaling typ with d.
func put(t testing.TB, st state.Store, kind state.Kind, name string, v any, typ string, d records.Detail) {
	t.Helper()
	ctx := context.Background()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, kind, name)
	switch {
	case errors.Is(err, state.ErrNotFound):
		_, err = st.Create(ctx, kind, name, data, records.Event(typ, d))
	case err == nil:
		_, err = st.Update(ctx, kind, name, rec.Revision, data, records.Event(typ, d))
	}
	if err != nil {
		t.Fatal(err)
	}
}

func host(name string, s records.HostStatus, reason, by string, since, until *time.Time) *records.Host {
	return &records.Host{Name: name, Alias: name, WorkdirRoot: records.DefaultWorkdirRoot, Pins: []records.HopPin{},
		Status: s, StatusReason: reason, StatusBy: by, StatusAt: since, StatusUntil: until, CreatedAt: t0.Add(-24 * time.Hour)}
}

func task(id, name, hostName string, p records.Phase, age time.Duration) *records.Task {
	return &records.Task{ID: id, Name: name, Profile: "prod", Host: hostName, Phase: p, CreatedAt: t0.Add(-age),
		Sessions: []string{}, LaunchEnv: []string{}}
}

func addHost(t testing.TB, st state.Store, h *records.Host) {
	t.Helper()
	put(t, st, records.KindHost, h.Name, h, "host."+string(h.Status),
		records.Detail{Host: h.Name, Phase: string(h.Status), Reason: h.StatusReason, By: h.StatusBy, Until: h.StatusUntil})
}

func addTask(t testing.TB, st state.Store, tk *records.Task) {
	t.Helper()
	d := records.Detail{Host: tk.Host, TaskID: tk.ID, Phase: string(tk.Phase)}
	if tk.Teardown != nil {
		d.Step, d.Outcome, d.Reason = tk.Teardown.Step, string(tk.Teardown.Drain), tk.Teardown.Reason
	}
	put(t, st, records.KindTask, tk.ID, tk, "task."+string(tk.Phase), d)
}

func addJob(t testing.TB, st state.Store, j *records.CleanupJob) {
	t.Helper()
	put(t, st, records.KindJob, j.ID, j, "job."+string(j.State), records.Detail{Host: j.Host, TaskID: j.TaskID,
		Phase: string(j.State), Attempts: j.Attempts, NextAt: j.NextAt, Error: j.LastError})
}

func addSession(t testing.TB, st state.Store, s *records.Session) {
	t.Helper()
	put(t, st, records.KindSession, s.ID, s, "session."+string(s.State), records.Detail{Host: s.Host, TaskID: s.TaskID, Phase: string(s.State)})
}

// teardownStore is a store in the middle of a drain at 2 a.m.: every
// state the view has to show, at least once.
func teardownStore(t testing.TB) *state.FileStore {
	st := newStore(t)
	addHost(t, st, host("web-1", records.HostAdmitted, "", "", nil, nil))
	addHost(t, st, host("web-2", records.HostQuarantined, "disk full on /var", "alice@ops", at(-41*time.Minute), at(79*time.Minute)))
	addHost(t, st, host("web-3", records.HostCordoned, "kernel upgrade", "bob@ops", at(-3*time.Hour), nil))
	addHost(t, st, host("web-4", records.HostDraining, "rack move", "alice@ops", at(-5*time.Minute), nil))

	ready := task("tready0000001", "fix-login", "web-1", records.PhaseReady, 3*time.Hour)
	ready.Sessions = []string{"sready0000001"}
	addTask(t, st, ready)
	addSession(t, st, &records.Session{ID: "sready0000001", TaskID: ready.ID, Host: "web-1", State: records.SessionRunning, StartedAt: t0.Add(-time.Hour)})
	addSession(t, st, &records.Session{ID: "sready0000002", TaskID: ready.ID, Host: "web-1", State: records.SessionRunning, StartedAt: t0.Add(-time.Hour)})

	pend := task("tpend00000001", "bump-deps", "web-2", records.PhaseCleanupPending, 2*time.Hour)
	pend.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepDrain, Drain: records.DrainUnreachable}
	addTask(t, st, pend)
	addJob(t, st, &records.CleanupJob{ID: pend.ID, TaskID: pend.ID, Host: "web-2", Trigger: records.TriggerArchive,
		State: records.JobRetryWait, Attempts: 3, NextAt: at(4*time.Minute + 12*time.Second),
		LastError: "ssh: connect to host web-2 port 22: connection timed out"})

	failed := task("tfail00000001", "old-spike", "web-3", records.PhaseCleanupPending, 30*time.Hour)
	failed.Teardown = &records.Teardown{Trigger: records.TriggerDelete, Step: records.StepCleanup, Drain: records.DrainDrained,
		Receipts: []string{"9f86d081884c7d65", "2c26b46b68ffc68f"}}
	addTask(t, st, failed)
	addJob(t, st, &records.CleanupJob{ID: failed.ID, TaskID: failed.ID, Host: "web-3", Trigger: records.TriggerDelete,
		State: records.JobFailed, Attempts: records.MaxAttempts, LastError: "cleanup script exited 2: rm: cannot remove 'cache': Permission denied"})

	drain := task("tdrain0000001", "refactor-api", "web-4", records.PhaseDraining, time.Hour)
	drain.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepDrain}
	addTask(t, st, drain)
	addSession(t, st, &records.Session{ID: "sdrain0000001", TaskID: drain.ID, Host: "web-4", State: records.SessionRunning, StartedAt: t0.Add(-time.Hour)})

	gone := task("tgone00000001", "done-work", "web-1", records.PhaseAbsent, 48*time.Hour)
	gone.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepReclaim, Drain: records.DrainDrained,
		Receipts: []string{"4e07408562bedb8b"}, Reclaim: records.ReclaimRemoved}
	addTask(t, st, gone)
	return st
}

// frozen is the view's clock in tests.
func frozen() time.Time { return t0 }

// options are a test view's options over st.
func options(st Store, a Actions) Options {
	return Options{Store: st, Actions: a, Since: -1, Now: frozen, Location: time.UTC}
}

// keptNote is what a normal archive records when the profile keeps task
// directories: a note, not an error.
const keptNote = "profile prod does not set reclaim_task_dir: the directory stays"

// firstHourStore is a new user's first host after a few launches: three
// running tasks (the third with a long name), one archived with its
// directory kept, and the claims every verb took and gave back.
func firstHourStore(t testing.TB) *state.FileStore {
	st := newStore(t)
	addHost(t, st, host("web-1", records.HostAdmitted, "", "", nil, nil))
	for i, name := range []string{"first", "second", "third-refactor-of-the-login-flow"} {
		id := fmt.Sprintf("t%012d", i+1)
		sid := fmt.Sprintf("s%012d", i+1)
		tk := task(id, name, "web-1", records.PhasePreparing, time.Duration(3-i)*time.Hour)
		addTask(t, st, tk)
		claimAndGiveBack(t, st, id)
		tk.Phase, tk.Sessions = records.PhaseReady, []string{sid}
		addTask(t, st, tk)
		addSession(t, st, &records.Session{ID: sid, TaskID: id, Host: "web-1", State: records.SessionRunning, StartedAt: t0.Add(-time.Hour)})
		claimAndGiveBack(t, st, id)
	}
	kept := task("tkept00000001", "old-spike", "web-1", records.PhaseArchived, 30*time.Hour)
	kept.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepReclaim, Drain: records.DrainDrained,
		Reclaim: records.ReclaimDisabled, Reason: keptNote}
	addTask(t, st, kept)
	addJob(t, st, &records.CleanupJob{ID: kept.ID, TaskID: kept.ID, Host: "web-1", Trigger: records.TriggerArchive,
		State: records.JobSucceeded, Attempts: 1})
	claimAndGiveBack(t, st, kept.ID)
	return st
}

// claimAndGiveBack takes the claim on a task and releases it, as every
// verb that changes it does.
func claimAndGiveBack(t testing.TB, st *state.FileStore, taskID string) {
	t.Helper()
	ctx := context.Background()
	c, err := st.AcquireClaim(ctx, records.KindTask, taskID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
}
