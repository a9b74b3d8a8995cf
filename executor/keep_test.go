package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// keepTTL is short enough that an operation blocked for longer than it
// outlives its claim unless the claim is renewed while it works.
const keepTTL = 2 * time.Second

// scriptGate is a pair of files a profile script and the test share: the script
// creates started and then waits (bounded) until the test creates release.
type scriptGate struct{ started, release string }

func newScriptGate(t *testing.T) scriptGate {
	dir := t.TempDir()
	return scriptGate{started: filepath.Join(dir, "started"), release: filepath.Join(dir, "release")}
}

// script blocks the profile step until the test opens the gate; it gives
// up (exit 9) after a minute so a failed test leaves nothing running.
func (g scriptGate) script() string {
	return fmt.Sprintf("|\n  touch %s\n  i=0\n  while [ ! -e %s ]; do sleep 0.1; i=$((i+1)); [ $i -lt 600 ] || exit 9; done\n", g.started, g.release)
}

func (g scriptGate) waitStarted(t *testing.T, done <-chan error) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(g.started); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the operation ended before its script started: %v", err)
		case <-time.After(50 * time.Millisecond): // polling for the script's marker
		}
		if i > 1200 {
			t.Fatal("the script did not start within a minute")
		}
	}
}

func (g scriptGate) open(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(g.release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// heldPastTTL polls the claim on a record until the store shows it renewed
// after the moment it would have expired had it not been: the same claim
// (no takeover), live at every look. It returns the claim as last seen.
func heldPastTTL(t *testing.T, st state.Store, kind state.Kind, name string) state.Claim {
	t.Helper()
	ctx := context.Background()
	var first *state.Claim
	for i := 0; ; i++ {
		c, err := st.ClaimHolder(ctx, kind, name)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			t.Fatalf("the claim on %s %s lapsed while its operation worked (first seen expiring at %v, now %v)",
				kind, name, first.ExpiresAt, time.Now())
		}
		if first == nil {
			first = c
		}
		if c.ID != first.ID {
			t.Fatalf("the claim on %s %s changed hands: %s, then %s", kind, name, first.ID, c.ID)
		}
		// A renewal at r sets the expiry to r+TTL: this one happened after
		// the claim first seen would have run out.
		if c.ExpiresAt.After(first.ExpiresAt.Add(c.TTL)) && time.Now().After(first.ExpiresAt) {
			return *c
		}
		if i > 1200 {
			t.Fatalf("the claim on %s %s was not renewed within a minute: %+v", kind, name, c)
		}
		time.Sleep(50 * time.Millisecond) // polling the stored claim
	}
}

// claimRefused asserts another process cannot take the task's claim now.
func claimRefused(t *testing.T, other *Executor, taskID string) {
	t.Helper()
	tc, err := other.claimTask(context.Background(), taskID)
	var busy *TaskBusyError
	if !errors.As(err, &busy) {
		if tc != nil {
			tc.release(context.Background())
		}
		t.Fatalf("a second claimant while the operation works: %v, want a *TaskBusyError", err)
	}
}

// An archive whose cleanup script runs longer than the claim's TTL keeps
// its claim all along (renewed while it works): another process is
// refused past the TTL, and the archive ends archived.
func TestArchiveKeepsItsClaimWhileCleanupRuns(t *testing.T) {
	f := newLaunchFixture(t)
	f.cfg.ClaimTTL = keepTTL
	e, other := f.open(t), f.open(t)
	g := newScriptGate(t)
	ctx := context.Background()
	profile := fmt.Sprintf("name: slow\nhost: prod\nworkdir_root: %s\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\ncleanup_script: %s",
		f.root, f.bare, g.script())
	if _, err := e.ApplyProfile(ctx, "slow.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := e.Launch(ctx, LaunchOptions{Profile: "slow", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, controller.StateExited)

	done := make(chan error, 1)
	var res *TeardownResult
	go func() {
		var err error
		res, err = e.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
		done <- err
	}()
	g.waitStarted(t, done)
	heldPastTTL(t, e.cfg.Store, records.KindTask, task.ID)
	claimRefused(t, other, task.ID)
	g.open(t)
	if archErr := <-done; archErr != nil {
		t.Fatalf("the archive: %v", archErr)
	}
	got, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Phase != records.PhaseArchived || got.Phase != records.PhaseArchived || got.Teardown.Step != records.StepReclaim {
		t.Fatalf("after the archive: result %+v, task %s at step %s", res, got.Phase, got.Teardown.Step)
	}
	if held, err := e.cfg.Store.ClaimHolder(ctx, records.KindTask, task.ID); err != nil || held != nil {
		t.Fatalf("the claim after the archive: %+v, %v", held, err)
	}
}

// A launch whose prepare script runs longer than the claim's TTL keeps
// the new task's claim all along: another process is refused past the
// TTL, and the launch starts its session.
func TestLaunchKeepsItsClaimWhilePrepareRuns(t *testing.T) {
	f := newLaunchFixture(t)
	f.cfg.ClaimTTL = keepTTL
	e, other := f.open(t), f.open(t)
	g := newScriptGate(t)
	ctx := context.Background()
	profile := fmt.Sprintf("name: slow\nhost: prod\nworkdir_root: %s\nshell: sh\nprepare_script: %s", f.root, g.script())
	if _, err := e.ApplyProfile(ctx, "slow.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var task *records.Task
	var s *records.Session
	go func() {
		var err error
		task, s, err = e.Launch(ctx, LaunchOptions{Profile: "slow", Command: []string{"true"}})
		done <- err
	}()
	g.waitStarted(t, done)
	tasks, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks while preparing: %d, %v", len(tasks), err)
	}
	id := tasks[0].ID
	heldPastTTL(t, e.cfg.Store, records.KindTask, id)
	claimRefused(t, other, id)
	g.open(t)
	if launchErr := <-done; launchErr != nil {
		t.Fatalf("the launch: %v", launchErr)
	}
	if task.ID != id || task.Phase != records.PhaseReady || s == nil {
		t.Fatalf("after the launch: task %s %s, session %+v", task.ID, task.Phase, s)
	}
	waitState(t, s.SessionDir, controller.StateExited)
}

// A drain worker whose session stop runs longer than the claim's TTL (an
// agent that ignores SIGTERM is killed only after the stop grace) keeps
// the host's drain all along: a second worker is refused past the TTL,
// and the first ends the drain complete.
func TestDrainWorkerKeepsItsClaimWhileStopping(t *testing.T) {
	f := newLaunchFixture(t)
	g := newScriptGate(t)
	ctx := context.Background()
	_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "trap '' TERM; touch " + g.started + "; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, nil)
	f.cfg.ClaimTTL = keepTTL
	a, b := f.open(t), f.open(t)
	if _, err := a.BeginHostDrain(ctx, "prod", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	stopping := make(chan struct{})
	var once sync.Once
	type result struct {
		d   *records.HostDrain
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := a.RunHostDrain(ctx, "prod", func(line string) {
			if strings.HasSuffix(line, ": stopping") {
				once.Do(func() { close(stopping) })
			}
		})
		done <- result{d, err}
	}()
	select {
	case <-stopping:
	case r := <-done:
		t.Fatalf("the drain ended before stopping the session: %+v, %v", r.d, r.err)
	}
	held := heldPastTTL(t, a.cfg.Store, records.KindHostDrain, "prod")
	_, err = b.RunHostDrain(ctx, "prod", nil)
	var claimed *state.ClaimedError
	if !errors.As(err, &claimed) || claimed.Holder.Since != held.Holder.Since {
		t.Fatalf("a second worker while the first stops the session: %v", err)
	}
	r := <-done
	if r.err != nil || r.d.State != records.DrainComplete || !slices.Contains(r.d.Stopped, s.ID) {
		t.Fatalf("the drain: %+v, %v", r.d, r.err)
	}
}

// A resume whose prepare script runs longer than the claim's TTL keeps
// the task's claim all along, like a launch. The script blocks only once
// armed, so the launch before it is quick.
func TestResumeKeepsItsClaimWhilePrepareRuns(t *testing.T) {
	f := newLaunchFixture(t)
	f.cfg.ClaimTTL = keepTTL
	e, other := f.open(t), f.open(t)
	g := newScriptGate(t)
	armed := filepath.Join(filepath.Dir(g.started), "armed")
	ctx := context.Background()
	profile := fmt.Sprintf("name: slow\nhost: prod\nworkdir_root: %s\nshell: sh\nprepare_script: |\n  if [ -e %s ]; then %s  fi\n",
		f.root, armed, strings.TrimPrefix(g.script(), "|\n"))
	if _, err := e.ApplyProfile(ctx, "slow.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := e.Launch(ctx, LaunchOptions{Profile: "slow", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var resumed *records.Session
	go func() {
		var err error
		_, resumed, err = e.Resume(ctx, task.ID, []string{"true"}, Reports{})
		done <- err
	}()
	g.waitStarted(t, done)
	heldPastTTL(t, e.cfg.Store, records.KindTask, task.ID)
	claimRefused(t, other, task.ID)
	g.open(t)
	if err := <-done; err != nil {
		t.Fatalf("the resume: %v", err)
	}
	if resumed == nil || resumed.ID == s.ID || resumed.TaskID != task.ID {
		t.Fatalf("resumed session %+v", resumed)
	}
	waitState(t, resumed.SessionDir, controller.StateExited)
}
