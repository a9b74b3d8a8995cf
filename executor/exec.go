package executor

import (
	"context"
	"errors"
	"fmt"
	"io"

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
	err = in.c.Stream(ctx, in.command(argv), stdin, stdout, stderr)
	return in.status(ctx, err, "running a command in task "+in.t.ID)
}

// Terminal is the user's terminal, lent to a command on the host.
type Terminal struct {
	ssh.PTY
	In  io.Reader
	Out io.Writer
	// Raw hands the terminal over (raw mode) once the host is reached and
	// the directory checked, so that errors before are printed as usual;
	// it returns how to take it back.
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
	err = in.c.StreamPTY(ctx, in.command(argv), term.PTY, term.In, term.Out)
	return in.status(ctx, err, doing)
}

// inTask is a task's directory reached on its host and checked, where
// exec and shell run their command.
type inTask struct {
	t     *records.Task
	shell string
	c     *ssh.Client
	wd    *ssh.Watchdog
}

// enterTask connects to the task's host and proves its directory the
// login user's alone before anything runs there. On failure the status is
// 255 for the transport, else -1.
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
	shell := "sh"
	if p, err := e.profileOf(ctx, t); err == nil {
		shell = shellOf(p)
	}
	h, _, err := e.getHost(ctx, t.Host)
	if err != nil {
		return nil, -1, err
	}
	c, err := e.dialHost(ctx, h)
	if err != nil {
		return nil, 255, err
	}
	// A command may run for long: a dead link must end it, not hang it.
	in := &inTask{t: t, shell: shell, c: c, wd: c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)}
	if err := in.checkDir(ctx); err != nil {
		defer in.close()
		// A refusal, a directory that is gone or a check that failed on
		// the host is no transport failure.
		var hp *HostPathError
		var gone *TaskDirGoneError
		var ee *ssh.ExitError
		switch {
		case errors.As(err, &hp):
			hp.Host = t.Host // the name the user knows, not the ssh label
			return nil, -1, fmt.Errorf("task %s: %w", t.ID, err)
		case errors.As(err, &gone):
			return nil, -1, err
		case ctx.Err() != nil || errors.As(err, &ee):
			return nil, -1, fmt.Errorf("task %s: checking its directory on %s: %w", t.ID, t.Host, err)
		}
		return nil, 255, linkLost(in.wd, t.Host, fmt.Errorf("task %s: checking its directory: %w", t.ID, err),
			"checking task "+t.ID+"'s directory", "nothing was run", "")
	}
	return in, 0, nil
}

func (in *inTask) close() {
	in.wd.Stop()
	in.c.Close()
}

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

// checkDir applies the host check's ownership rules (hostcheck.go) to the
// task directory: every directory above it the user's or root's and
// writable by nobody else (unless sticky), the directory itself the
// user's, a real directory, writable by nobody else. Once that holds,
// nobody else can swap it before the command's cd.
func (in *inTask) checkDir(ctx context.Context) error {
	kv, err := runMarked(ctx, in.c, hostCheckFuncs+`D=`+remoteWord(in.t.TaskDir)+`
if [ ! -e "$D" ] && [ ! -L "$D" ]; then echo dir=gone; exit 0; fi
kx_anc "$D"; kx_own "$D" d
echo dir=ours
`)
	switch {
	case err != nil:
		return err
	case kv["dir"] == "gone":
		return &TaskDirGoneError{TaskID: in.t.ID, Host: in.t.Host, Dir: in.t.TaskDir, Phase: in.t.Phase}
	case kv["dir"] != "ours":
		return fmt.Errorf("the directory check ended without its verdict")
	}
	return nil
}

// command is argv, or an interactive login shell when there is none, run
// by the profile's shell in the task directory.
func (in *inTask) command(argv []string) string {
	script := "cd -- " + remoteWord(in.t.TaskDir) + " && exec " + ssh.ShellQuote(in.shell) + " -l"
	if len(argv) > 0 {
		script += " -c " + ssh.ShellQuote(shellJoin(argv))
	}
	return script
}

// status is how the command ended: its exit status, or why none is
// known (see Exec).
func (in *inTask) status(ctx context.Context, err error, doing string) (int, error) {
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Signal == "":
		return ee.Code, nil
	case ctx.Err() != nil:
		return -1, ctx.Err()
	}
	return 255, linkLost(in.wd, in.t.Host, fmt.Errorf("task %s: %w", in.t.ID, err), doing,
		"it may still be running on the host", "")
}
