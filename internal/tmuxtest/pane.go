// Package tmuxtest runs a shell in a real terminal, a tmux pane on its own
// server, for the end-to-end tests of the live view: type into it, read
// its screen, wait for a condition on the screen, read the terminal's
// settings as its shell sees them.
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/procstat"
)

// Prompt is the pane's shell prompt.
const Prompt = "e2e$"

// wait bounds every wait on the screen.
const wait = 30 * time.Second

// Pane is one tmux session running an interactive sh, 120x30 until
// resized.
type Pane struct {
	t    *testing.T
	dir  string // the socket and the shell's scratch files
	sock string
}

// New starts the pane and waits for its prompt; it is gone when t ends.
func New(t *testing.T) *Pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required: apt-get install -y tmux (.ci/run installs it)")
	}
	// A short path: unix socket names are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "kw")
	if err != nil {
		t.Fatal(err)
	}
	p := &Pane{t: t, dir: dir, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	p.tmux("new-session", "-d", "-s", "w", "-x", "120", "-y", "30", "env PS1='"+Prompt+" ' sh -i")
	p.WaitFor("the shell prompt", func(s string) bool { return strings.Contains(s, Prompt) })
	return p
}

func (p *Pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Resize makes the pane width columns by height rows: the program in it
// gets the SIGWINCH a terminal window's resize sends.
func (p *Pane) Resize(width, height int) {
	p.t.Helper()
	p.tmux("resize-window", "-t", "w", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height))
}

// Screen is what the pane shows, as text.
func (p *Pane) Screen() string { return p.tmux("capture-pane", "-p", "-t", "w") }

// Painted is the screen with its escapes (colours and attributes).
func (p *Pane) Painted() string { return p.tmux("capture-pane", "-e", "-p", "-t", "w") }

// Keys types into the pane: each argument is a tmux key (Enter, Tab) or
// literal text.
func (p *Pane) Keys(ks ...string) { p.tmux(append([]string{"send-keys", "-t", "w"}, ks...)...) }

// WaitFor polls the screen until cond holds, and returns that screen.
func (p *Pane) WaitFor(what string, cond func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		s := p.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("gave up waiting for %s after %s; the screen is:\n%s", what, wait, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Run clears the screen and runs the shell command line cmd, which
// prints its exit status when it ends (see Exited).
func (p *Pane) Run(cmd string) {
	p.t.Helper()
	p.Keys("clear; "+cmd+"; echo exited=$?", "Enter")
}

var exitedRE = regexp.MustCompile(`exited=(\d+)\n`)

// Exited waits for the command line started by Run to end, and returns
// its exit status and the screen then.
func (p *Pane) Exited() (int, string) {
	p.t.Helper()
	s := p.WaitFor("the command's exit status", func(s string) bool { return exitedRE.MatchString(s) })
	code, _ := strconv.Atoi(exitedRE.FindStringSubmatch(s)[1])
	return code, s
}

// Foreground waits until the pane's foreground job is the program exe
// (an absolute path) and returns its pid: the shell runs each job in its
// own process group, led by the job's first process.
func (p *Pane) Foreground(exe string) int {
	p.t.Helper()
	shell, err := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "-t", "w", "#{pane_pid}")))
	if err != nil {
		p.t.Fatalf("the pane's shell pid: %v", err)
	}
	deadline := time.Now().Add(wait)
	for {
		pid := foregroundGroup(shell)
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); pid > 0 && got == exe {
			return pid
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("gave up waiting for %s to be the pane's foreground job after %s; the screen is:\n%s", exe, wait, p.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// foregroundGroup is the foreground process group of pid's terminal
// (tpgid in /proc/PID/stat), 0 if unknown.
func foregroundGroup(pid int) int {
	f, err := procstat.Of(pid)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(f[5])
	return n
}

// Stty is the terminal's settings (`stty -a`) as the pane's shell sees
// them; the pane must be at its prompt.
func (p *Pane) Stty() string {
	p.t.Helper()
	out := filepath.Join(p.dir, fmt.Sprintf("stty-%d", time.Now().UnixNano()))
	// Written aside and renamed, so the file is whole once it exists.
	p.Keys(fmt.Sprintf("clear; stty -a > %[1]s.tmp && mv %[1]s.tmp %[1]s", out), "Enter")
	var b []byte
	p.WaitFor("stty's settings", func(string) bool {
		var err error
		b, err = os.ReadFile(out)
		return err == nil
	})
	return string(b)
}

// AtPrompt reports whether the screen ends with the shell's prompt.
func AtPrompt(screen string) bool { return strings.HasSuffix(strings.TrimSpace(screen), Prompt) }

// Row is the screen line of the table row named name (its first
// column; the selected row starts with '>'), or "".
func Row(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, ">")); len(f) > 0 && f[0] == name {
			return l
		}
	}
	return ""
}
