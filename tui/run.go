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

// ErrHangup: the terminal went away (SIGHUP: an SSH connection dropped,
// the window closed).
var ErrHangup = errors.New("the terminal hung up")

// Run shows the view on a terminal until the user quits, ctx ends, or the
// terminal hangs up, and restores the terminal on each of those and on a
// panic. bubbletea itself handles SIGINT, SIGTERM (a clean quit) and
// panics in Update, View and commands; SIGHUP it leaves to Go's default,
// which would kill the process with the terminal still raw, so it is
// caught here. Actions still running when the view exits are cancelled.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Context = ctx
	p := tea.NewProgram(New(o), tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	hungUp := make(chan struct{})
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
		case <-hup:
			close(hungUp)
			p.Kill()
		case <-done:
		}
	}()

	_, err := p.Run()
	select {
	case <-hungUp:
		return ErrHangup
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
