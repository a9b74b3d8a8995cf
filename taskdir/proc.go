package taskdir

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// pipeGrace bounds how long output pipes are drained after the process
// exits or is killed: a grandchild that escaped the group (or a daemon a
// script left behind) must not hold the helper open.
const pipeGrace = 2 * time.Second

// GroupCommand runs name in its own process group and, when ctx ends,
// kills the whole group: git's ssh and remote helpers and a script's
// children die with it instead of outliving the timeout.
func GroupCommand(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace
	return cmd
}

// requestContext applies a request's timeout_seconds (default 10 min).
func requestContext(ctx context.Context, seconds int) (context.Context, context.CancelFunc) {
	d := 10 * time.Minute
	if seconds > 0 {
		d = time.Duration(seconds) * time.Second
	}
	return context.WithTimeout(ctx, d)
}
