package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"
)

// Why the view stopped without being asked to quit.
var (
	// ErrHangup: the terminal went away (SIGHUP: an SSH connection
	// dropped, the window closed).
	ErrHangup = errors.New("the terminal hung up")
	// ErrSignalled: SIGINT or SIGTERM.
	ErrSignalled = errors.New("stopped by a signal")
)

// Run shows the view on a terminal until the user quits, ctx ends, or a
// signal stops it, and restores the terminal on every one of those and on
// a panic. bubbletea recovers panics in Update, View and commands itself;
// signals are handled here rather than by bubbletea, which knows only
// SIGINT and SIGTERM and leaves SIGHUP to Go's default: that would kill
// the process with the terminal still raw. Actions still running when the
// view exits are cancelled.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Context = ctx
	p := tea.NewProgram(New(o), tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out),
		tea.WithoutSignalHandler())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var stopped error // set before Kill, read after Run returns
	caught := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		// A goroutine of ours: bubbletea does not recover its panics,
		// so it restores the terminal itself.
		defer func() {
			if r := recover(); r != nil {
				p.Kill()
			}
		}()
		select {
		case s := <-sigs:
			stopped = ErrSignalled
			if s == syscall.SIGHUP {
				stopped = ErrHangup
			}
			close(caught)
			p.Kill()
		case <-done:
		}
	}()

	_, err := p.Run()
	select {
	case <-caught:
		return stopped
	default:
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tea.ErrProgramPanic):
		return fmt.Errorf("the view crashed and was closed: %w", err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}
