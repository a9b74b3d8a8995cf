package watch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/tmuxtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// These run the test binary as `kandev-exec watch` (see e2e_main_test.go)
// for what needs a hand inside it: a panic in an action or in the view.
// The real CLI's view, following other processes and stopped by signals,
// is cmd's TestWatchInATerminalFollowsOtherProcesses.

// watchIn starts the test binary as `kandev-exec watch ARGS` in the
// pane, with the environment assignments env, and returns its pid once
// it shows the live view.
func watchIn(t *testing.T, p *tmuxtest.Pane, stateDir, env, args string) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		t.Fatal(err)
	}
	p.Run(strings.Join([]string{env, "KANDEV_WATCH_E2E=1 KANDEV_EXEC_STATE_DIR=" + stateDir, self, "watch", args}, " "))
	p.WaitFor("the live view", func(s string) bool { return strings.Contains(s, "live seq") })
	return p.Foreground(self)
}

// stop ends the view running as pid with SIGTERM: it was still up, so
// it exits interrupted (130).
func stop(t *testing.T, p *tmuxtest.Pane, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, s := p.Exited(); code != 130 {
		t.Fatalf("the view, stopped by SIGTERM: exit %d, want 130:\n%s", code, s)
	}
}

// cordon cordons the selected host (web-1) from the keyboard.
func cordon(p *tmuxtest.Pane, reason string) {
	p.Keys("c")
	p.WaitFor("the reason prompt", func(s string) bool { return strings.Contains(s, "Reason for cordon host web-1") })
	p.Keys(reason, "Enter")
	p.WaitFor("the confirmation", func(s string) bool {
		return strings.Contains(s, "Cordon host web-1: it takes no new launches") && strings.Contains(s, "Press y to confirm")
	})
	p.Keys("y")
}

// The view in a real terminal: keys cordon and drain a host through the
// executor's actions, a panic in an action fails that action and the
// view goes on, and a panic in the view ends it (exit 1) with the
// terminal as it was.
func TestWatchInATerminal(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	st, err := state.Open(stateDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put(t, st, records.KindHost, "web-1", records.Host{Name: "web-1", Status: records.HostAdmitted, CreatedAt: t0}, "host.added", nil)
	p := tmuxtest.New(t)
	before := p.Stty()

	// Cordon web-1 (selected: the first row) from the keyboard.
	pid := watchIn(t, p, stateDir, "", "")
	cordon(p, "maintenance window")
	p.WaitFor("web-1 cordoned", func(s string) bool { return strings.Contains(tmuxtest.Row(s, "web-1"), "cordoned") })
	rec, err := st.Get(context.Background(), records.KindHost, "web-1")
	if err != nil {
		t.Fatal(err)
	}
	var h records.Host
	_ = json.Unmarshal(rec.Data, &h)
	if h.Status != records.HostCordoned || h.StatusReason != "maintenance window" || !strings.HasPrefix(h.StatusBy, "host cordon") {
		t.Fatalf("stored host %+v", h)
	}

	// Drain it: the view starts the background worker, which finds nothing
	// running there and completes; the journal brings its steps back.
	p.Keys("d")
	p.WaitFor("the deadline prompt", func(s string) bool { return strings.Contains(s, "Deadline") })
	p.Keys("Enter")
	p.WaitFor("the drain confirmation", func(s string) bool {
		return strings.Contains(s, "Drain host web-1: cordon it, then stop its 0 running sessions gracefully, waiting at most 1h0m0s")
	})
	p.Keys("y")
	p.WaitFor("the drain's end", func(s string) bool { return strings.Contains(s, "host.drain_complete") })
	rec, err = st.Get(context.Background(), records.KindHost, "web-1")
	if err != nil {
		t.Fatal(err)
	}
	h = records.Host{}
	_ = json.Unmarshal(rec.Data, &h)
	if h.Status != records.HostCordoned || h.Drain == nil || h.Drain.State != records.DrainComplete {
		t.Fatalf("stored host after the drain %+v (drain %+v)", h, h.Drain)
	}
	stop(t, p, pid)

	// A panicking action fails, and the view goes on.
	pid = watchIn(t, p, stateDir, "KANDEV_WATCH_E2E_PANIC=action", "")
	cordon(p, "boom")
	p.WaitFor("the failed action", func(s string) bool {
		return strings.Contains(s, "cordon host web-1: failed: panic: cordon exploded")
	})
	stop(t, p, pid)

	// A panic in the view closes it, and says so.
	watchIn(t, p, stateDir, "KANDEV_WATCH_E2E_PANIC=update", "")
	cordon(p, "boom")
	code, s := p.Exited()
	if code != 1 || !strings.Contains(s, "error: the view crashed and was closed: panic: error exploded") {
		t.Fatalf("a panic in the view: exit %d, want 1 and the crash on the screen:\n%s", code, s)
	}
	// The alternate screen is gone: the shell's own screen is back, with
	// its prompt, and none of the view.
	if strings.Contains(s, "HOSTS") || !tmuxtest.AtPrompt(s) {
		t.Fatalf("a panic in the view: the view's screen is still up:\n%s", s)
	}
	if after := p.Stty(); after != before {
		t.Fatalf("a panic in the view: the terminal settings changed:\nbefore %s\nafter  %s", before, after)
	}
}

// On a terminal the view paints its states; NO_COLOR and --no-color
// leave not one escape on the screen, the words alone saying each state.
func TestWatchInATerminalWithoutColour(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	st, err := state.Open(stateDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2", Status: records.HostQuarantined, StatusReason: "disk full", CreatedAt: t0},
		"host.quarantined", &records.Detail{Host: "web-2", Phase: "quarantined", Reason: "disk full"})
	p := tmuxtest.New(t)
	for _, c := range []struct{ env, args string }{{"", ""}, {"NO_COLOR=1", ""}, {"", "--no-color"}} {
		pid := watchIn(t, p, stateDir, c.env, c.args)
		s := p.Painted()
		if !strings.Contains(tmuxtest.Row(p.Screen(), "web-2"), "quarantined") {
			t.Fatalf("%s%s: the state is not in words:\n%s", c.env, c.args, p.Screen())
		}
		if painted := strings.Contains(s, "\x1b["); painted != (c.env == "" && c.args == "") {
			t.Fatalf("env %q args %q: painted %v:\n%q", c.env, c.args, painted, s)
		}
		stop(t, p, pid)
	}
}
