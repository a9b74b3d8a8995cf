package cmd

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// onPTY is the CLI started on a new pseudo-terminal, as from a user's
// terminal: its own session, the terminal its stdin, stdout, stderr and
// controlling terminal.
type onPTY struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File // the user's side: what is typed and what is shown
	tty  *os.File // the CLI's side, held open here to read its settings
	// cooked is the terminal's settings before the CLI started.
	cooked string
	out    sshtest.Buffer
	done   chan error
}

// newPTY opens a pseudo-terminal of rows x cols; start runs the CLI on it.
func newPTY(t *testing.T, rows, cols uint16) *onPTY {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	p := &onPTY{t: t, ptmx: ptmx, tty: tty, done: make(chan error, 1)}
	go p.read()
	return p
}

// read keeps what the terminal shows, until ptmx is closed. It answers
// nothing: the CLI must not ask the terminal anything (ends checks).
func (p *onPTY) read() {
	buf := make([]byte, 4096)
	for {
		n, err := p.ptmx.Read(buf)
		p.out.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// start runs the CLI (the rig's binary and environment, plus env) on the
// terminal, noting the terminal's settings first.
func (p *onPTY) start(r *crashRig, env []string, args ...string) {
	p.t.Helper()
	p.cooked = p.settings()
	p.cmd = exec.Command(r.bin, args...)
	p.cmd.Env = append(append([]string{}, r.env...), env...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = p.tty, p.tty, p.tty
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true} // fd 0 becomes the controlling terminal
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { p.cmd.Process.Kill() })
	go func() { p.done <- p.cmd.Wait() }()
}

// settings is the terminal's `stty -g`.
func (p *onPTY) settings() string {
	p.t.Helper()
	cmd := exec.Command("stty", "-g")
	cmd.Stdin = p.tty
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("stty -g: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// waitRaw waits until the terminal is raw (no signals from keys, no
// output processing): the host has it now.
func (p *onPTY) waitRaw() {
	p.t.Helper()
	waitUntil(p.t, 30*time.Second, "the terminal in raw mode", func() bool {
		tio, err := unix.IoctlGetTermios(int(p.tty.Fd()), unix.TCGETS)
		return err == nil && tio.Lflag&unix.ISIG == 0 && tio.Oflag&unix.OPOST == 0
	})
}

// typeLine types s and Enter.
func (p *onPTY) typeLine(s string) {
	p.t.Helper()
	if _, err := p.ptmx.Write([]byte(s + "\r")); err != nil {
		p.t.Fatal(err)
	}
}

// waitOutput waits until the screen's output matches re.
func (p *onPTY) waitOutput(re string) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for !rx.MatchString(p.out.String()) {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s in the output:\n%q", re, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ends waits for the CLI to end, and fails unless its exit status is
// want and the terminal's settings are back as they were.
func (p *onPTY) ends(want int) {
	p.t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("the CLI did not exit; output:\n%q", p.out.String())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != want {
		p.t.Fatalf("exit status %d, want %d; output:\n%q", code, want, p.out.String())
	}
	if after := p.settings(); after != p.cooked {
		p.t.Fatalf("terminal settings not restored:\nbefore %s\nafter  %s", p.cooked, after)
	}
	// A query's answer comes back as input, where it would read (and
	// drop) what the user typed ahead.
	for _, query := range []string{"\x1b]11;?", "\x1b[6n"} {
		if strings.Contains(p.out.String(), query) {
			p.t.Fatalf("the CLI asked the terminal %q; output:\n%q", query, p.out.String())
		}
	}
}

// `task shell` and `task exec -t` on a real terminal against a real sshd:
// a login shell on a terminal in the task directory, $TERM and the window
// size forwarded, resizes followed, the exit status passed through, and
// the local terminal given back as it was however the command ends (exit,
// SIGTERM, SIGHUP, a dropped link, an error before or after connecting).
func TestTaskShellOnATerminal(t *testing.T) {
	srv := sshtest.NewServer(t)
	rig := newCrashRig(t, buildCLI(t), srv, gitOrigin(t))
	id, dir := rig.launch("true")
	term := []string{"TERM=vt220"}

	t.Run("shell", func(t *testing.T) {
		p := newPTY(t, 30, 100)
		p.start(rig, term, "task", "shell", id)
		p.waitRaw()
		p.typeLine(`printf 'pwd=%s\n' "$(pwd)"; tty; echo "size=$(stty size) term=$TERM"; echo "mid-$((40+2))"`)
		p.waitOutput(`mid-42`)
		p.waitOutput(`pwd=` + regexp.QuoteMeta(dir) + `\r\n`)
		p.waitOutput(`\n/dev/pts/[0-9]+\r\n`)
		p.waitOutput(`\nsize=30 100 term=vt220\r\n`)

		// A resize reaches the host: SIGWINCH here, window-change there.
		// Which of the keys and the window-change arrives first is not
		// ordered, so the question is asked until the new size answers.
		if err := pty.Setsize(p.ptmx, &pty.Winsize{Rows: 41, Cols: 123}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "the new size on the host", func() bool {
			p.typeLine(`echo "now=$(stty size)"`)
			return strings.Contains(p.out.String(), "now=41 123\r\n")
		})

		p.typeLine("exit 3")
		p.ends(3)
	})

	t.Run("exec -t", func(t *testing.T) {
		p := newPTY(t, 25, 90)
		p.start(rig, term, "task", "exec", "-t", id, "--", "sh", "-c", `tty; echo "size=$(stty size)"; exit 5`)
		p.waitOutput(`/dev/pts/[0-9]+\r\nsize=25 90\r\n`)
		p.ends(5)
	})

	t.Run("unknown task", func(t *testing.T) {
		p := newPTY(t, 24, 80)
		p.start(rig, term, "task", "shell", "tnotthere")
		p.ends(1)
		p.waitOutput(`task "tnotthere" not found`)
	})

	// A directory another user could change is refused on the host before
	// the shell starts, with the terminal given back for the error.
	t.Run("refused", func(t *testing.T) {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		p := newPTY(t, 24, 80)
		p.start(rig, term, "task", "shell", id)
		p.ends(1)
		p.waitOutput(`error: task ` + id + `: host prod: refusing ` + regexp.QuoteMeta(dir) + ` is writable by group or others`)
	})

	// Ended from outside while the shell runs: Ctrl-C is a key for the
	// host in raw mode, so SIGTERM and SIGHUP (the terminal went away) are
	// interruptions, and a link that drops is 255, as with ssh(1).
	signal := func(sig syscall.Signal) func(*onPTY) error {
		return func(p *onPTY) error { return p.cmd.Process.Signal(sig) }
	}
	for _, c := range []struct {
		name string
		end  func(*onPTY) error
		want int
	}{
		{"SIGTERM", signal(syscall.SIGTERM), 130},
		{"SIGHUP", signal(syscall.SIGHUP), 130},
		{"link lost", func(*onPTY) error { srv.Stop(); return nil }, 255}, // last: it stops the server
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPTY(t, 24, 80)
			p.start(rig, term, "task", "shell", id)
			p.waitRaw()
			p.typeLine(`echo "up-$((1+1))"`)
			p.waitOutput(`up-2`)
			if err := c.end(p); err != nil {
				t.Fatal(err)
			}
			p.ends(c.want)
		})
	}
}
