package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// Exec runs argv in the task directory through the profile's login shell,
// with stdout and stderr kept apart. It returns the remote exit status;
// 255 with an error means the transport failed, as with ssh(1); -1 with
// an error means no remote status applies (unknown task, no directory
// yet, a directory that fails the ownership check, interrupted).
func (e *Executor) Exec(ctx context.Context, prefix string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	in, code, err := e.enterTask(ctx, prefix)
	if err != nil {
		return code, err
	}
	defer in.close()
	out := in.gate(stdout)
	err = in.hc.c.Stream(ctx, in.script(argv), stdin, out, stderr)
	return in.status(ctx, err, out, "running a command in task "+in.t.ID)
}

// Terminal is the user's terminal, lent to a command on the host.
type Terminal struct {
	ssh.PTY
	In  io.Reader
	Out io.Writer
	// Raw hands the terminal over (raw mode) once the host is reached, so
	// that errors before are printed as usual; it returns how to take it
	// back.
	Raw func() (restore func(), err error)
}

// ExecTerminal is Exec on a pseudo-terminal: the command's output, both
// streams, comes back on term.Out, and term's size follows the local
// window. With no argv it runs the profile's shell as an interactive
// login shell. It returns what Exec does.
func (e *Executor) ExecTerminal(ctx context.Context, prefix string, argv []string, term Terminal) (int, error) {
	in, code, err := e.enterTask(ctx, prefix)
	if err != nil {
		return code, err
	}
	defer in.close()
	if term.Raw != nil {
		restore, err := term.Raw()
		if err != nil {
			return -1, err
		}
		defer restore()
	}
	doing := "running a command in task " + in.t.ID
	if len(argv) == 0 {
		doing = "running a shell in task " + in.t.ID
	}
	out := in.gate(term.Out)
	err = in.hc.c.StreamPTY(ctx, in.script(argv), term.PTY, term.In, out)
	return in.status(ctx, err, out, doing)
}

// inTask is a task's host reached for a command in the task directory.
type inTask struct {
	t     *records.Task
	shell string
	hc    *hostConn // its watchdog ends a command whose link died, not hangs it
	nonce string    // the line the directory check prints once it passed
}

// enterTask connects to the task's host. On failure the status is 255 for
// the transport, else -1.
func (e *Executor) enterTask(ctx context.Context, prefix string) (*inTask, int, error) {
	t, _, err := e.GetTask(ctx, prefix)
	if err != nil {
		return nil, -1, err
	}
	switch {
	case t.Phase == records.PhaseAbsent:
		return nil, -1, &UsageError{Msg: fmt.Sprintf("task %s is absent: its directory was removed from %s, so nothing can run there", t.ID, t.Host)}
	case t.TaskDir == "":
		return nil, -1, &UsageError{Msg: fmt.Sprintf("task %s has no prepared directory yet (phase %s): `kandev-exec task resume %s` prepares it", t.ID, t.Phase, t.ID)}
	}
	e.touch(ctx, t.ID)
	shell := "sh"
	p, err := e.profileOf(ctx, t)
	if err != nil && t.ProfileSnapshot != nil {
		p, err = e.teardownProfile(ctx, t) // an archived task outlives its profile
	}
	if err == nil {
		shell = shellOf(p)
	}
	h, _, err := e.getHost(ctx, t.Host)
	if err != nil {
		return nil, -1, err
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return nil, -1, err
	}
	hc, err := e.connect(ctx, h)
	if err != nil {
		return nil, 255, err
	}
	return &inTask{t: t, shell: shell, hc: hc, nonce: "kandev-exec-dir-ok-" + hex.EncodeToString(b)}, 0, nil
}

func (in *inTask) close() { in.hc.Close() }

// TaskDirGoneError is a live task whose directory is not on its host.
type TaskDirGoneError struct {
	TaskID, Host, Dir string
	Phase             records.Phase
}

func (e *TaskDirGoneError) Error() string {
	return fmt.Sprintf("task %s (phase %s): its directory %s is not on %s", e.TaskID, e.Phase, e.Dir, e.Host)
}

func (e *TaskDirGoneError) Hint() string {
	if e.Phase.Launchable() {
		return fmt.Sprintf("`kandev-exec task resume %s` prepares it again", e.TaskID)
	}
	return fmt.Sprintf("`kandev-exec task show %s` says where its teardown stands", e.TaskID)
}

// script checks the task directory, then runs argv there, or an
// interactive login shell when there is none, with the profile's shell.
//
// The check applies the host check's ownership rules (remote.HostCheckFuncs):
// every directory above the task directory the user's or root's and
// writable by nobody else (unless sticky), the directory itself the
// user's, a real directory, writable by nobody else. Once that holds,
// nobody else can swap it before the cd. It runs in the command's own
// round trip and says it passed with the nonce line, which gate keeps
// from the output; a refusal exits remote.RefusedExit before anything runs.
func (in *inTask) script(argv []string) string {
	cmd := "cd -- \"$D\" && exec " + shquote.Quote(in.shell) + " -l"
	if len(argv) > 0 {
		cmd += " -c " + shquote.Quote(shellJoin(argv))
	}
	return remote.HostCheckFuncs + `D=` + remote.Word(in.t.TaskDir) + `
if [ ! -e "$D" ] && [ ! -L "$D" ]; then echo dir=gone; exit ` + remote.RefusedExitStr + `; fi
kx_anc "$D"; kx_own "$D" d
echo ` + in.nonce + `
` + cmd
}

// gate is w behind the directory check's verdict.
func (in *inTask) gate(w io.Writer) *verdictGate {
	return &verdictGate{w: w, nonce: in.nonce}
}

// status is how the command ended: its exit status, or why none is
// known (see Exec).
func (in *inTask) status(ctx context.Context, err error, out *verdictGate, doing string) (int, error) {
	if !out.passed {
		return in.refused(ctx, err, out.held.String())
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Signal == "":
		return ee.Code, nil
	case ctx.Err() != nil:
		return -1, ctx.Err()
	}
	return 255, in.hc.linkLost(fmt.Errorf("task %s: %w", in.t.ID, err), doing,
		"it may still be running on the host", "")
}

// refused is why the command never ran: the directory check refused,
// found no directory, or did not finish.
func (in *inTask) refused(ctx context.Context, err error, held string) (int, error) {
	kv := remote.Markers([]byte(strings.ReplaceAll(held, "\r\n", "\n"))) // a terminal ends lines with \r\n
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.Signal == "" && ee.Code == remote.RefusedExit {
		if re := remote.Refusal(in.t.Host, kv); re != nil {
			return -1, fmt.Errorf("task %s: %w", in.t.ID, re)
		}
		if kv["dir"] == "gone" {
			return -1, &TaskDirGoneError{TaskID: in.t.ID, Host: in.t.Host, Dir: in.t.TaskDir, Phase: in.t.Phase}
		}
	}
	switch {
	case ctx.Err() != nil:
		return -1, ctx.Err()
	case err == nil:
		return -1, fmt.Errorf("task %s: the directory check on %s exited 0 without its verdict", in.t.ID, in.t.Host)
	case ee != nil:
		return -1, fmt.Errorf("task %s: the directory check on %s failed: %w", in.t.ID, in.t.Host, err)
	}
	return 255, in.hc.linkLost(fmt.Errorf("task %s: checking its directory: %w", in.t.ID, err),
		"checking task "+in.t.ID+"'s directory", "nothing was run", "")
}

// verdictGate holds what the host prints until the directory check's
// nonce line, then passes everything after it on. What it held is the
// check's refusal when the line never comes; only its tail is kept, where
// that is.
type verdictGate struct {
	w      io.Writer
	nonce  string
	held   strings.Builder
	passed bool
}

// heldMax bounds what is held before the verdict (a login script may
// print); heldTail is kept when it is reached.
const (
	heldMax  = 64 << 10
	heldTail = 16 << 10
)

func (g *verdictGate) Write(p []byte) (int, error) {
	if g.passed {
		return g.w.Write(p)
	}
	g.held.Write(p)
	s := g.held.String()
	i := strings.Index(s, g.nonce)
	if i < 0 {
		if len(s) > heldMax {
			g.held.Reset()
			g.held.WriteString(s[len(s)-heldTail:])
		}
		return len(p), nil
	}
	rest := s[i+len(g.nonce):]
	if rest == "" || rest == "\r" {
		return len(p), nil // the line's end is still to come
	}
	g.passed = true
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "\r"), "\n")
	if rest != "" {
		if _, err := io.WriteString(g.w, rest); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
