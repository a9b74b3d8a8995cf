package task

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/ssh"
)

// localTerminal is the user's terminal (stdin), lent to a command on the
// host by `task shell` and `task exec -t`: raw while the command runs and
// restored however it ends, its size sent at the start and on every
// SIGWINCH.
type localTerminal struct {
	f     *os.File
	mu    sync.Mutex
	saved *term.State // the settings raw mode replaced; nil when not raw
}

// needTerminal is stdin as a terminal, or a usage error: what names the
// command, instead is the hint.
func needTerminal(ios *cmdutil.IOStreams, what, instead string) (*localTerminal, error) {
	f, ok := ios.In.(*os.File)
	if !ios.IsStdinTTY() || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, cmdutil.WithHint(cmdutil.FlagErrorf("%s needs a terminal on stdin, and stdin is not one", what), instead)
	}
	return &localTerminal{f: f}, nil
}

func (l *localTerminal) fd() int { return int(l.f.Fd()) }

// raw hands every key to the host, which echoes and interprets it (Ctrl-C
// included); it returns restore.
func (l *localTerminal) raw() (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := term.MakeRaw(l.fd())
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	l.saved = st
	return l.restore, nil
}

// restore puts back the settings raw replaced; calling it again, or
// without raw, does nothing.
func (l *localTerminal) restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.saved != nil {
		_ = term.Restore(l.fd(), l.saved)
		l.saved = nil
	}
}

// size is the window's size; a terminal that does not say gets 80x24.
func (l *localTerminal) size() ssh.WindowSize {
	w, h, err := term.GetSize(l.fd())
	if err != nil || w <= 0 || h <= 0 {
		return ssh.WindowSize{Width: 80, Height: 24}
	}
	return ssh.WindowSize{Width: w, Height: h}
}

// run runs argv (none: the login shell) in task id on this terminal, with
// $TERM forwarded. SIGHUP (the terminal went away) ends it as SIGINT and
// SIGTERM do; the terminal is restored before run returns, whatever the
// end.
func (l *localTerminal) run(ctx context.Context, ex *executor.Executor, id string, argv []string, out io.Writer) (int, error) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	defer l.restore()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	resize := make(chan ssh.WindowSize, 1)
	done := make(chan struct{})
	defer close(done)
	go l.follow(winch, resize, done)
	return ex.ExecTerminal(ctx, id, argv, executor.Terminal{
		PTY: ssh.PTY{Term: os.Getenv("TERM"), Size: l.size(), Resize: resize},
		In:  l.f, Out: out, Raw: l.raw,
	})
}

// follow turns each SIGWINCH into the window's size. Only the newest
// size matters: one not yet sent is replaced.
func (l *localTerminal) follow(winch <-chan os.Signal, resize chan ssh.WindowSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-winch:
			sz := l.size()
			select {
			case <-resize:
			default:
			}
			resize <- sz // room: this is the only sender
		}
	}
}
