package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// pane is one tmux session with a shell, on its own server.
type pane struct {
	t    *testing.T
	sock string
}

func newPane(t *testing.T) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required: apt-get install -y tmux (.ci/run installs it)")
	}
	// A short socket path: unix socket names are limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "kw")
	if err != nil {
		t.Fatal(err)
	}
	p := &pane{t: t, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	p.tmux("new-session", "-d", "-s", "w", "-x", "120", "-y", "30", "env PS1='e2e$ ' sh -i")
	p.waitFor("the shell prompt", func(s string) bool { return strings.Contains(s, "e2e$") })
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p *pane) screen() string { return p.tmux("capture-pane", "-p", "-t", "w") }

// painted is the screen with its escapes (colours and attributes).
func (p *pane) painted() string { return p.tmux("capture-pane", "-e", "-p", "-t", "w") }

// keys types into the pane: each argument is a tmux key (Enter, Tab) or
// literal text.
func (p *pane) keys(ks ...string) { p.tmux(append([]string{"send-keys", "-t", "w"}, ks...)...) }

// waitFor polls the screen until cond holds (15 s at most).
func (p *pane) waitFor(what string, cond func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s; the screen is:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// row is the screen line that starts a row with name, or "".
func row(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, ">")); len(f) > 0 && f[0] == name {
			return l
		}
	}
	return ""
}

// stty is the terminal's settings as the shell in the pane sees them.
func (p *pane) stty(dir string) string {
	p.t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("stty-%d", time.Now().UnixNano()))
	p.keys("clear; stty -a > "+out+"; echo stty-done", "Enter")
	p.waitFor("stty", func(s string) bool {
		return strings.Contains(s, "stty-done\n") || strings.HasSuffix(strings.TrimSpace(s), "e2e$") && fileExists(out)
	})
	p.waitFor("stty's file", func(string) bool { b, _ := os.ReadFile(out); return len(b) > 0 && strings.Contains(string(b), "\n") })
	b, _ := os.ReadFile(out)
	return string(b)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// watchInAgain stops the view running as pid (SIGTERM) and starts
// another with env.
func (p *pane) watchInAgain(dir, stateDir string, pid int, env string) int {
	p.t.Helper()
	_ = syscall.Kill(pid, syscall.SIGTERM)
	p.waitFor("the exit", func(s string) bool { return strings.Contains(s, "exited=") })
	return p.watchIn(dir, stateDir, env, "")
}

// watchIn starts the test binary as `kandev-exec watch ARGS` in the
// pane, with the environment assignments env.
func (p *pane) watchIn(dir, stateDir, env, args string) (pid int) {
	p.t.Helper()
	pidfile := filepath.Join(dir, "pid")
	os.Remove(pidfile)
	p.keys(fmt.Sprintf("clear; %s KANDEV_WATCH_E2E=1 KANDEV_WATCH_E2E_PIDFILE=%s KANDEV_EXEC_STATE_DIR=%s %s watch %s; echo exited=$?",
		env, pidfile, stateDir, os.Args[0], args), "Enter")
	p.waitFor("the live view", func(s string) bool { return strings.Contains(s, "live seq") })
	b, err := os.ReadFile(pidfile)
	if err != nil {
		p.t.Fatal(err)
	}
	pid, err = strconv.Atoi(string(b))
	if err != nil {
		p.t.Fatal(err)
	}
	return pid
}

// cordon cordons the selected host (web-1) from the keyboard.
func (p *pane) cordon(reason string) {
	p.t.Helper()
	p.keys("c")
	p.waitFor("the reason prompt", func(s string) bool { return strings.Contains(s, "Reason for cordon host web-1") })
	p.keys(reason, "Enter")
	p.waitFor("the confirmation", func(s string) bool {
		return strings.Contains(s, "Cordon host web-1: it takes no new launches") && strings.Contains(s, "Press y to confirm")
	})
	p.keys("y")
}

// The view in a real terminal: rows change when another process writes
// the store, keys cordon a host through the actions, and SIGTERM, SIGHUP
// and a panic in an action each end it with the terminal as it was.
func TestWatchInATerminal(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	st, err := state.Open(stateDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, h := range []string{"web-1", "web-2"} {
		put(t, st, records.KindHost, h, records.Host{Name: h, Status: records.HostAdmitted, CreatedAt: t0}, "host.added", nil)
	}
	p := newPane(t)
	before := p.stty(dir)

	pid := p.watchIn(dir, stateDir, "", "")
	since := time.Now().Add(-time.Minute).UTC()
	// Another process quarantines a host and archives a task.
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2", Status: records.HostQuarantined, StatusReason: "disk full",
		StatusBy: "alice", StatusAt: &since, CreatedAt: t0}, "host.quarantined",
		&records.Detail{Host: "web-2", Phase: "quarantined", Reason: "disk full", By: "alice"})
	put(t, st, records.KindTask, "tarch0000001", records.Task{ID: "tarch0000001", Host: "web-1", Phase: records.PhaseDraining, CreatedAt: t0},
		"task.draining", &records.Detail{Host: "web-1", TaskID: "tarch0000001", Phase: "draining", Step: records.StepDrain})
	p.waitFor("web-2 quarantined", func(s string) bool {
		r := row(s, "web-2")
		return strings.Contains(r, "quarantined") && strings.Contains(r, "disk full")
	})
	p.waitFor("the task draining", func(s string) bool { return strings.Contains(row(s, "tarch0000001"), "draining") })
	put(t, st, records.KindTask, "tarch0000001", records.Task{ID: "tarch0000001", Host: "web-1", Phase: records.PhaseArchived, CreatedAt: t0},
		"task.archived", &records.Detail{Host: "web-1", TaskID: "tarch0000001", Phase: "archived", Outcome: "drained"})
	p.waitFor("the task archived", func(s string) bool { return strings.Contains(row(s, "tarch0000001"), "archived") })

	// Cordon web-1 (selected: the first row) from the keyboard.
	p.cordon("maintenance window")
	p.waitFor("web-1 cordoned", func(s string) bool { return strings.Contains(row(s, "web-1"), "cordoned") })
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
	p.keys("d")
	p.waitFor("the deadline prompt", func(s string) bool { return strings.Contains(s, "Deadline") })
	p.keys("Enter")
	p.waitFor("the drain confirmation", func(s string) bool {
		return strings.Contains(s, "Drain host web-1: cordon it, then stop its 0 running sessions gracefully, waiting at most 1h0m0s")
	})
	p.keys("y")
	p.waitFor("the drain's end", func(s string) bool { return strings.Contains(s, "host.drain_complete") })
	rec, err = st.Get(context.Background(), records.KindHost, "web-1")
	if err != nil {
		t.Fatal(err)
	}
	h = records.Host{}
	_ = json.Unmarshal(rec.Data, &h)
	if h.Status != records.HostCordoned || h.Drain == nil || h.Drain.State != records.DrainComplete {
		t.Fatalf("stored host after the drain %+v (drain %+v)", h, h.Drain)
	}

	// A panicking action fails, and the view goes on.
	pid = p.watchInAgain(dir, stateDir, pid, "KANDEV_WATCH_E2E_PANIC=action")
	p.cordon("boom")
	p.waitFor("the failed action", func(s string) bool {
		return strings.Contains(s, "cordon host web-1: failed: panic: cordon exploded")
	})

	for _, c := range []struct {
		name string
		env  string
		stop func(pid int)
		exit string
		says string
	}{
		{"SIGTERM", "", func(pid int) { _ = syscall.Kill(pid, syscall.SIGTERM) }, "exited=130", "error: interrupted"},
		{"SIGHUP", "", func(pid int) { _ = syscall.Kill(pid, syscall.SIGHUP) }, "exited=130", "error: interrupted: the terminal hung up"},
		{"a panic in the view", "KANDEV_WATCH_E2E_PANIC=update", func(int) {
			p.cordon("boom")
		}, "exited=1", "error: the view crashed and was closed: panic: error exploded"},
	} {
		if c.name != "SIGTERM" {
			pid = p.watchIn(dir, stateDir, c.env, "")
		}
		c.stop(pid)
		s := p.waitFor(c.name+": the exit", func(s string) bool { return strings.Contains(s, "exited=") })
		if !strings.Contains(s, c.exit) || !strings.Contains(s, c.says) {
			t.Fatalf("%s: want %s and %q on the screen:\n%s", c.name, c.exit, c.says, s)
		}
		// The alternate screen is gone: the shell's own screen is back,
		// with its prompt, and none of the view.
		if strings.Contains(s, "HOSTS") || !strings.HasSuffix(strings.TrimSpace(s), "e2e$") {
			t.Fatalf("%s: the view's screen is still up:\n%s", c.name, s)
		}
		if after := p.stty(dir); after != before {
			t.Fatalf("%s: the terminal settings changed:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}
}

// On a terminal the view paints its states; NO_COLOR and --no-color
// leave not one escape on the screen, the words alone saying each state.
func TestWatchInATerminalWithoutColour(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	st, err := state.Open(stateDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2", Status: records.HostQuarantined, StatusReason: "disk full", CreatedAt: t0},
		"host.quarantined", &records.Detail{Host: "web-2", Phase: "quarantined", Reason: "disk full"})
	p := newPane(t)
	for _, c := range []struct{ env, args string }{{"", ""}, {"NO_COLOR=1", ""}, {"", "--no-color"}} {
		pid := p.watchIn(dir, stateDir, c.env, c.args)
		s := p.painted()
		if !strings.Contains(row(p.screen(), "web-2"), "quarantined") {
			t.Fatalf("%s%s: the state is not in words:\n%s", c.env, c.args, p.screen())
		}
		if painted := strings.Contains(s, "\x1b["); painted != (c.env == "" && c.args == "") {
			t.Fatalf("env %q args %q: painted %v:\n%q", c.env, c.args, painted, s)
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		p.waitFor("the exit", func(s string) bool { return strings.Contains(s, "exited=") })
	}
}
