package executor

import (
	"context"
	"errors"

	"github.com/kdlbs/kandev-exec/internal/remote"
)

// InterruptedError is a launch stopped (Ctrl-C, SIGTERM) before any
// controller was asked for. Stopped says the helper answered that the
// step it was serving (the checkout, the prepare script) ended, its
// process group killed: nothing of the launch is left running there.
type InterruptedError struct {
	Step    string
	Stopped bool
}

func (e *InterruptedError) Error() string {
	if !e.Stopped {
		return "launch interrupted"
	}
	what := "the checkout"
	if e.Step == StepPrepareScript {
		what = "the prepare script"
	}
	return "launch interrupted; " + what + " was stopped on the host (its process group killed)"
}

func (e *InterruptedError) Unwrap() error { return context.Canceled }

// interruption is err as the launch records it when ctx ended during
// step; otherwise err.
func interruption(ctx context.Context, step string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	var pe *PrepareScriptError
	var re *remote.Error
	stopped := errors.As(err, &pe) || errors.As(err, &re)
	return &InterruptedError{Step: step, Stopped: stopped}
}
