package watch

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/tmuxtest"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden, the screens of the view in a terminal")

// keptNote is what an archive records when the profile keeps the
// directory: a note, not an error.
const keptNote = "profile keep does not set reclaim_task_dir: the directory stays"

// seedFirstHour writes a new user's first host after a few launches, with
// the claims every verb takes and gives back, journaled at one second per
// write from ten minutes before t0: three ready tasks (the third with a
// long name), one archived with its directory kept. Their profile keeps
// task directories and has no cleanup script, so an archive needs no host.
func seedFirstHour(t *testing.T, dir string) {
	t.Helper()
	st, err := state.Open(dir, state.Options{Now: Ticking(t0.Add(-10 * time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put(t, st, records.KindHost, "web-1", records.Host{Name: "web-1", Alias: "web-1", WorkdirRoot: records.DefaultWorkdirRoot,
		Pins: []records.HopPin{}, Status: records.HostAdmitted, CreatedAt: t0.Add(-24 * time.Hour)}, "host.added", &records.Detail{Host: "web-1"})
	put(t, st, records.KindProfile, "keep", profiles.Profile{Name: "keep", Host: "web-1", WorkdirRoot: records.DefaultWorkdirRoot, Shell: "sh"},
		"profile.applied", nil)
	claimed := func(id string) {
		c, err := st.AcquireClaim(context.Background(), records.KindTask, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseClaim(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	task := func(tk records.Task) {
		d := &records.Detail{Host: tk.Host, TaskID: tk.ID, Phase: string(tk.Phase)}
		if td := tk.Teardown; td != nil {
			d.Step, d.Outcome, d.Reason = td.Step, string(td.Drain), td.Reason
		}
		put(t, st, records.KindTask, tk.ID, tk, "task."+string(tk.Phase), d)
		claimed(tk.ID)
	}
	kept := records.Task{ID: "tkept00000001", Name: "old-spike", Profile: "keep", Host: "web-1", Phase: records.PhaseArchived,
		CreatedAt: t0.Add(-30 * time.Hour), Sessions: []string{}, LaunchEnv: []string{},
		Teardown: &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepReclaim, Drain: records.DrainNotAttempted,
			Reclaim: records.ReclaimDisabled, Reason: keptNote}}
	task(kept)
	put(t, st, records.KindJob, kept.ID, records.CleanupJob{ID: kept.ID, TaskID: kept.ID, Host: "web-1", Trigger: records.TriggerArchive,
		State: records.JobSucceeded, Attempts: 1}, "job.succeeded", &records.Detail{Host: "web-1", TaskID: kept.ID, Phase: "succeeded", Attempts: 1})
	for i, n := range [][2]string{{"tfirst0000001", "first"}, {"tsecond000001", "second"}, {"tthird0000001", "third-refactor-of-the-login-flow"}} {
		tk := records.Task{ID: n[0], Name: n[1], Profile: "keep", Host: "web-1", Phase: records.PhasePreparing,
			CreatedAt: t0.Add(-time.Duration(3-i) * time.Hour), Sessions: []string{}, LaunchEnv: []string{}}
		task(tk)
		tk.Phase = records.PhaseReady
		task(tk)
	}
}

// Ticking is a store's clock for goldens: one second past from at each
// reading, so the same writes journal the same times on every run.
// (Exported for the e2e binary, in package watch_test.)
func Ticking(from time.Time) func() time.Time {
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		from = from.Add(time.Second)
		return from
	}
}

// screenIs waits until the pane shows testdata/NAME.golden exactly;
// with -update it writes the screen once settled holds instead.
func screenIs(t *testing.T, p *tmuxtest.Pane, name string, settled func(string) bool) string {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		s := p.WaitFor(name, settled)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p.WaitFor(fmt.Sprintf("the screen in %s (go test ./cmd/watch -run %s -update rewrites it)", path, t.Name()),
		func(s string) bool { return s == string(want) })
}

// The first hour in a real terminal at 80x24 and 160x45, the real
// executor behind the keys, each state a golden: every task named, a kept
// directory's note not shown as an error and the footer whole; a filter
// keeping the events of the task it keeps; the archive prompt showing the
// name it asks for; the archive's outcome shown with its row archived;
// claim events shown only once asked for.
func TestWatchInATerminalFirstHour(t *testing.T) {
	p := tmuxtest.New(t)
	for _, sz := range [][2]int{{80, 24}, {160, 45}} {
		size := fmt.Sprintf("%dx%d", sz[0], sz[1])
		stateDir := filepath.Join(t.TempDir(), "state")
		seedFirstHour(t, stateDir)
		p.Resize(sz[0], sz[1])
		pid := watchIn(t, p, stateDir, "TZ=UTC KANDEV_WATCH_E2E_NOW="+t0.Format(time.RFC3339), "")

		p.Keys("Tab")
		s := screenIs(t, p, "first-hour/panes-"+size, func(s string) bool { return strings.Contains(s, "[ENVIRONMENTS 4]") })
		if r := tmuxtest.Row(s, "tkept00000001"); !strings.Contains(r, "old-spike") || strings.Contains(r, "reclaim_task_dir") {
			t.Fatalf("%s: the kept task's row %q: no name, or its note as an error", size, r)
		}

		// One key a write: a terminal delivers "/third" at once, which is
		// not the / that opens the filter.
		p.Keys("/")
		p.WaitFor("the filter's prompt", func(s string) bool { return strings.Contains(s, "enter keeps, esc clears") })
		p.Keys("third", "Enter")
		s = screenIs(t, p, "first-hour/filtered-"+size, func(s string) bool {
			return strings.Contains(s, `filter "third"`) && strings.Contains(s, "task.ready           task tthird0000001")
		})
		p.Keys("Escape")
		p.WaitFor("the filter cleared", func(s string) bool { return !strings.Contains(s, `filter "third"`) })

		// The selection stayed on the task the filter kept.
		p.Keys("a")
		screenIs(t, p, "first-hour/archive-prompt-"+size, func(s string) bool { return strings.Contains(s, `"third-refactor-of-the-login-flow", and`) })

		p.Keys("third-refactor-of-the-login-flow", "Enter")
		s = screenIs(t, p, "first-hour/archive-done-"+size, func(s string) bool { return strings.Contains(s, "done (action 1)") })
		if r := tmuxtest.Row(s, "tthird0000001"); !strings.Contains(r, " archived ") {
			t.Fatalf("%s: the archive says done while its row is %q", size, r)
		}

		p.Keys("C")
		screenIs(t, p, "first-hour/claims-"+size, func(s string) bool {
			return strings.Contains(s, "claim.released") && !strings.Contains(s, "claim events hidden")
		})
		stop(t, p, pid)
	}
}
