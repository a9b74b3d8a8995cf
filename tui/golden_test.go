package tui

import (
	"bytes"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/kdlbs/kandev-exec/records"
)

// Goldens are of settled views: the model runs in a real bubbletea
// program (teatest) until it has read the store, receives the keys of
// the story, quits, and its final View() at a fixed size is compared with
// testdata/<TestName>.golden. The clock is frozen at t0 and the store's
// clock is deterministic, so a golden changes only when the view does.
// Regenerate them all with: go test ./tui -run TestView -update

func settle(t *testing.T, m *Model, w, h int, keys ...tea.Msg) *Model {
	t.Helper()
	return settleOn(t, m, w, h, "live seq", keys...)
}

// settleOn waits for shown to be drawn before the keys are sent.
func settleOn(t *testing.T, m *Model, w, h int, shown string, keys ...tea.Msg) *Model {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(shown)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	for _, k := range keys {
		tm.Send(k)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
}

func golden(t *testing.T, m *Model) {
	t.Helper()
	teatest.RequireEqualOutput(t, []byte(m.View()+"\n"))
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

var (
	enter    = tea.KeyMsg{Type: tea.KeyEnter}
	esc      = tea.KeyMsg{Type: tea.KeyEsc}
	tab      = tea.KeyMsg{Type: tea.KeyTab}
	down     = tea.KeyMsg{Type: tea.KeyDown}
	up       = tea.KeyMsg{Type: tea.KeyUp}
	question = runes("?")
)

func TestViewEmptyStore(t *testing.T) {
	golden(t, settle(t, New(options(newStore(t), nil)), 80, 24))
}

func TestViewQuarantinedHostWithReasonAndTTL(t *testing.T) {
	st := newStore(t)
	addHost(t, st, host("web-1", records.HostAdmitted, "", "", nil, nil))
	addHost(t, st, host("web-2", records.HostQuarantined, "disk full on /var", "alice@ops", at(-41*time.Minute), at(79*time.Minute)))
	addHost(t, st, host("web-5", records.HostQuarantined, "sshd flapping", "sweep", at(-2*time.Hour), nil))
	golden(t, settle(t, New(options(st, fakeActions{})), 80, 24))
}

func TestViewDrainingEnvironment(t *testing.T) {
	st := newStore(t)
	addHost(t, st, host("web-4", records.HostDraining, "rack move", "alice@ops", at(-5*time.Minute), nil))
	tk := task("tdrain0000001", "refactor-api", "web-4", records.PhaseDraining, time.Hour)
	tk.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepDrain, Receipts: []string{"9f86d081884c7d659a2feaa0"}}
	tk.Sessions = []string{"sdrain0000001", "sdrain0000002"}
	addTask(t, st, tk)
	addSession(t, st, &records.Session{ID: "sdrain0000001", TaskID: tk.ID, Host: "web-4", State: records.SessionStopped})
	addSession(t, st, &records.Session{ID: "sdrain0000002", TaskID: tk.ID, Host: "web-4", State: records.SessionRunning})
	golden(t, settle(t, New(options(st, fakeActions{})), 80, 24, tab))
}

// The retry countdown is computed from the injected clock: at t0 the job
// is due in 4m12s, a minute later in 3m12s, and past it "due".
func TestViewCleanupPendingRetryCountdown(t *testing.T) {
	st := newStore(t)
	addHost(t, st, host("web-2", records.HostAdmitted, "", "", nil, nil))
	tk := task("tpend00000001", "bump-deps", "web-2", records.PhaseCleanupPending, 2*time.Hour)
	tk.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepDrain, Drain: records.DrainUnreachable}
	addTask(t, st, tk)
	addJob(t, st, &records.CleanupJob{ID: tk.ID, TaskID: tk.ID, Host: "web-2", Trigger: records.TriggerArchive,
		State: records.JobRetryWait, Attempts: 3, NextAt: at(4*time.Minute + 12*time.Second), LastError: "ssh: connect to host web-2 port 22: connection timed out"})
	m := settle(t, New(options(st, fakeActions{})), 100, 24, tab)
	golden(t, m)

	for _, c := range []struct {
		after time.Duration
		want  string
	}{{time.Minute, "in 3m12s"}, {4*time.Minute + 11*time.Second, "in 1s"}, {5 * time.Minute, "due"}} {
		m.now = t0.Add(c.after)
		cells, _ := m.w.envCells(tk.ID, m.now)
		if cells[8] != c.want {
			t.Errorf("at t0+%s: RETRY %q, want %q", c.after, cells[8], c.want)
		}
	}
}

func TestViewFailedJob(t *testing.T) {
	st := newStore(t)
	addHost(t, st, host("web-3", records.HostCordoned, "kernel upgrade", "bob@ops", at(-3*time.Hour), nil))
	tk := task("tfail00000001", "old-spike", "web-3", records.PhaseCleanupPending, 30*time.Hour)
	tk.Teardown = &records.Teardown{Trigger: records.TriggerDelete, Step: records.StepCleanup, Drain: records.DrainDrained,
		Receipts: []string{"9f86d081884c7d65", "2c26b46b68ffc68f"}}
	addTask(t, st, tk)
	addJob(t, st, &records.CleanupJob{ID: tk.ID, TaskID: tk.ID, Host: "web-3", Trigger: records.TriggerDelete,
		State: records.JobFailed, Attempts: records.MaxAttempts, LastError: "cleanup script exited 2: rm: cannot remove 'cache': Permission denied"})
	golden(t, settle(t, New(options(st, fakeActions{})), 120, 24, tab))
}

func TestViewFiltered(t *testing.T) {
	m := settle(t, New(options(teardownStore(t), fakeActions{})), 80, 24, runes("/"), runes("web-2"), enter)
	if m.filter != "web-2" || m.filtering {
		t.Fatalf("filter %q, still typing %v", m.filter, m.filtering)
	}
	golden(t, m)
}

func TestViewHelp(t *testing.T) {
	golden(t, settle(t, New(options(teardownStore(t), fakeActions{})), 80, 24, question))
}

func TestViewHelpReadOnly(t *testing.T) {
	golden(t, settle(t, New(options(teardownStore(t), nil)), 80, 24, question))
}

func TestView80x24(t *testing.T) {
	golden(t, settle(t, New(options(teardownStore(t), fakeActions{})), 80, 24, down))
}

func TestView200x60(t *testing.T) {
	golden(t, settle(t, New(options(teardownStore(t), fakeActions{})), 200, 60, tab, down, down))
}

func TestViewQuarantineConfirmation(t *testing.T) {
	m := settle(t, New(options(teardownStore(t), fakeActions{})), 80, 24,
		down, runes("Q"), runes("disk full"), enter, runes("2h"), enter)
	golden(t, m)
}

func TestViewDetail(t *testing.T) {
	golden(t, settle(t, New(options(teardownStore(t), fakeActions{})), 80, 24, tab, down, down, enter))
}

func TestViewTooSmall(t *testing.T) {
	golden(t, settleOn(t, New(options(newStore(t), nil)), 50, 10, "too small"))
}
