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

// Run shows the view on a terminal until the user quits, ctx ends, a
// signal stops it or it crashes, and restores the terminal on each.
//
// Every one of those ends in a quit, which restores the terminal after
// waiting (500 ms at most) for bubbletea's input reader; none ends in a
// kill, whose shutdown closes the input under that reader. So the view
// handles signals itself (bubbletea's own handler knows SIGINT and
// SIGTERM only, and SIGHUP's default would kill the process with the
// terminal still raw), watches ctx itself rather than giving it to
// bubbletea (a cancelled context kills), and recovers its own panics
// (see Model.Update). Actions still running when the view exits are
// cancelled.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	viewCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Context = viewCtx
	p := tea.NewProgram(New(o), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out), tea.WithoutSignalHandler())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var stopped error // set before the quit, read after Run returns
	caught := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		// A goroutine of ours: bubbletea recovers none of its panics.
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
			p.Quit()
		case <-ctx.Done():
			p.Quit()
		case <-done:
		}
	}()

	final, err := p.Run()
	select {
	case <-caught:
		return stopped
	default:
	}
	if m, ok := final.(*Model); ok && m.crash != nil {
		return fmt.Errorf("the view crashed and was closed: %w", m.crash)
	}
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return nil
}

// panicError is a panic the view recovered from.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

func recovered(r any) *panicError { return &panicError{value: r} }
