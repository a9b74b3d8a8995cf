package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// The first hour's states at the smallest common terminal and a large
// one, each a golden per size (testdata/TestViewFirstHour/<state>/WxH).

var firstHourSizes = [][2]int{{80, 24}, {160, 45}}

// storeActions archive as the executor does, as far as the store shows
// it: the claim taken, the task archived with its directory kept, the job
// done, the claim given back.
type storeActions struct {
	fakeActions
	st *state.FileStore
	t  testing.TB
}

func (a storeActions) Archive(ctx context.Context, id string) error {
	rec, err := a.st.Get(ctx, records.KindTask, id)
	if err != nil {
		return err
	}
	tk, err := decode(records.KindTask, rec.Data)
	if err != nil {
		return err
	}
	done := *tk.(*records.Task)
	done.Phase = records.PhaseArchived
	done.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepReclaim, Drain: records.DrainDrained,
		Reclaim: records.ReclaimDisabled, Reason: keptNote}
	claimAndGiveBack(a.t, a.st, id)
	addTask(a.t, a.st, &done)
	addJob(a.t, a.st, &records.CleanupJob{ID: id, TaskID: id, Host: done.Host, Trigger: records.TriggerArchive,
		State: records.JobSucceeded, Attempts: 1})
	return nil
}

// settleAfter is settle that, once the keys are in, also waits for shown
// to be drawn: what an action's end draws.
func settleAfter(t *testing.T, m *Model, w, h int, shown string, keys ...tea.Msg) *Model {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	for i, want := range []string{"live seq", shown} {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
		if i == 0 {
			for _, k := range keys {
				tm.Send(k)
			}
		}
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
}

func TestViewFirstHour(t *testing.T) {
	third := "third-refactor-of-the-login-flow"
	states := []struct {
		name  string
		shown string // drawn once the keys took effect; "": at once
		keys  []tea.Msg
		check func(t *testing.T, m *Model, v string)
	}{
		{name: "Panes", keys: []tea.Msg{tab}, check: func(t *testing.T, m *Model, v string) {
			// Every task is named, the kept directory's note is not an
			// error, and the footer's last hint is whole.
			for _, n := range []string{"old-spike", "first", "second", "third-"} {
				if !strings.Contains(v, n) {
					t.Errorf("no %q on screen", n)
				}
			}
			for _, l := range strings.Split(v, "\n") {
				if strings.HasPrefix(strings.TrimLeft(l, "> "), "tkept00000001") && strings.Contains(l, "reclaim_task_dir") {
					t.Errorf("the kept directory's note is shown as an error: %s", l)
				}
			}
			if got := envCell(t, m, "tkept00000001", "ERROR"); got != "-" {
				t.Errorf("ERROR %q for a kept directory", got)
			}
			if !strings.Contains(v, "j/k move") || strings.Contains(v, "claim.") {
				t.Errorf("footer cut, or claim events shown")
			}
		}},
		{name: "ArchivePrompt", keys: []tea.Msg{tab, down, down, down, runes("a")}, check: func(t *testing.T, m *Model, v string) {
			if !strings.Contains(v, `"`+third+`"`) {
				t.Errorf("the prompt does not show the whole name it asks for")
			}
		}},
		{name: "KeptNoteDetail", keys: []tea.Msg{tab, enter}, check: func(t *testing.T, m *Model, v string) {
			if !strings.Contains(strings.Join(strings.Fields(m.detail.text), " "), "note: "+keptNote) {
				t.Errorf("the detail view does not give the note:\n%s", m.detail.text)
			}
		}},
		{name: "Filtered", keys: []tea.Msg{runes("/"), runes("third"), enter}, check: func(t *testing.T, m *Model, v string) {
			for _, e := range []string{"task.ready           task t000000000003", "session.running      session s000000000003"} {
				if !strings.Contains(v, e) {
					t.Errorf("the filtered task's event %q is not shown", e)
				}
			}
		}},
		{name: "ArchiveDone", shown: "done (action 1)", keys: []tea.Msg{tab, down, runes("a"), runes("first"), enter},
			check: func(t *testing.T, m *Model, v string) {
				if got := envCell(t, m, "t000000000001", "PHASE"); got != "archived" {
					t.Errorf("after the archive: phase %q", got)
				}
			}},
		{name: "ClaimsShown", keys: []tea.Msg{runes("C")}, check: func(t *testing.T, m *Model, v string) {
			if !strings.Contains(v, "claim.released") {
				t.Errorf("C did not show the claim events")
			}
		}},
	}
	for _, s := range states {
		for _, sz := range firstHourSizes {
			t.Run(fmt.Sprintf("%s/%dx%d", s.name, sz[0], sz[1]), func(t *testing.T) {
				st := firstHourStore(t)
				m := New(options(st, storeActions{st: st, t: t}))
				if s.shown == "" {
					m = settle(t, m, sz[0], sz[1], s.keys...)
				} else {
					m = settleAfter(t, m, sz[0], sz[1], s.shown, s.keys...)
				}
				s.check(t, m, m.View())
				golden(t, m)
			})
		}
	}
}

// envCell is the cell of the column titled col in the task's row, as
// the view would write it uncut.
func envCell(t *testing.T, m *Model, id, col string) string {
	t.Helper()
	cells, _ := m.w.envCells(id, m.now)
	for i, c := range envCols {
		if c.title == col {
			return cells[i]
		}
	}
	t.Fatalf("no column %s", col)
	return ""
}
