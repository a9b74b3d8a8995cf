// Package hostdrain starts a host's background drain worker: what `host
// drain` and watch's drain key both do, so the two cannot differ.
package hostdrain

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/records"
)

// Started is a drain as recorded on the host, and the background worker
// running it.
type Started struct {
	Drain  *records.HostDrain
	PID    int
	Exited <-chan error // receives when the worker ends
}

// Start marks host draining (or extends the drain under way) and starts
// its worker: this program again as `host drain NAME --worker`, in its own
// session (a terminal's Ctrl-C never reaches it), writing to the drain's
// log under the state directory, with env (cmdutil.Factory.ChildEnv) as
// its settings. The drain goes on without the caller; its steps reach
// the journal and the log.
func Start(ctx context.Context, ex *executor.Executor, env []string, host string, deadline time.Duration) (*Started, error) {
	log, err := ex.DrainLog(host)
	if err != nil {
		return nil, err
	}
	var offset int64
	if fi, err := os.Stat(log); err == nil {
		offset = fi.Size()
	}
	d, err := ex.BeginHostDrain(ctx, host, time.Now().Add(deadline), log, offset)
	if err != nil {
		return nil, err
	}
	pid, exited, err := startWorker(env, host, log)
	if err != nil {
		return nil, fmt.Errorf("starting the drain worker of host %s: %w", host, err)
	}
	return &Started{Drain: d, PID: pid, Exited: exited}, nil
}

func startWorker(env []string, host, log string) (int, <-chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, err
	}
	lf, err := fsx.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, nil, err
	}
	defer lf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, err
	}
	defer null.Close()
	cmd := &exec.Cmd{Path: exe, Args: []string{os.Args[0], "host", "drain", host, "--worker"},
		Env: env, Stdin: null, Stdout: lf, Stderr: lf,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd.Process.Pid, exited, nil
}
