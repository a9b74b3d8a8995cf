package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// WaitFor is `session wait` and `task wait` once they know which
// session: it waits for the agent's end, prints the session (stdout with
// --json, one line on stderr without) and exits as the agent did, by the
// rule for commands that follow an agent (follow.go).
func WaitFor(ctx context.Context, ios *IOStreams, ex *executor.Executor, id string, timeout time.Duration, asJSON bool) error {
	s, err := ex.StartedSession(ctx, id)
	var ns *executor.NotStartedError
	switch {
	case errors.As(err, &ns) && s != nil && s.State == records.SessionFailed:
		// It ended before its agent ran: that is its end.
	case err != nil:
		return err
	default:
		final, err := ex.WaitSession(ctx, s, timeout)
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(ios.ErrOut, "\nStopped waiting; the agent keeps running: kandev-exec session wait %s\n", id)
			}
			if asJSON {
				// The session as recorded: the wait did not see its end.
				if werr := WriteJSON(ios.Out, executor.ViewOf(Recorded(ctx, ex, s))); werr != nil {
					return werr
				}
			}
			return ToolFailed(err)
		}
		s = final
	}
	if asJSON {
		if err := WriteJSON(ios.Out, executor.ViewOf(s)); err != nil {
			return err
		}
	} else if s.State != records.SessionLost && s.State != records.SessionFailed {
		fmt.Fprintln(ios.ErrOut, SessionOutcome(s))
	}
	return AgentExit(s)
}

// Recorded is s as the store has it now, or s: the document of a
// command that followed s and failed.
func Recorded(ctx context.Context, ex *executor.Executor, s *records.Session) *records.Session {
	if now, _, err := ex.GetSession(context.WithoutCancel(ctx), s.ID); err == nil {
		return now
	}
	return s
}

// SessionOutcome says in one line how a session stands, with the next
// command.
func SessionOutcome(s *records.Session) string {
	switch s.State {
	case records.SessionExited:
		if s.ExitCode == nil {
			return fmt.Sprintf("Session %s ended by a signal", s.ID)
		}
		return fmt.Sprintf("Session %s exited with code %d", s.ID, *s.ExitCode)
	case records.SessionStopped:
		return fmt.Sprintf("Session %s stopped; the task directory stays: kandev-exec task resume %s", s.ID, s.TaskID)
	case records.SessionLost, records.SessionFailed:
		return fmt.Sprintf("Session %s %s: %s; kandev-exec task resume %s starts a new one", s.ID, s.State, SafeText(s.Error), s.TaskID)
	}
	return fmt.Sprintf("Session %s is %s: kandev-exec session logs -f %s", s.ID, s.State, s.ID)
}

// WaitHelp is the wait verbs' long help; what is the agent waited for.
func WaitHelp(what string) string {
	return `Wait until ` + what + ` has ended, and exit with its status: its
exit code, or 128+N when signal N ended it. A session that already ended
answers at once. The session record goes to stdout with --json (state,
exit_code, signal say how it ended); without, one line on stderr says it.

Waiting holds one connection to the host. A link that dies is dialled again,
with backoff, and never taken for the end. Once the agent started, the
tool's own failures are exit 255 and the error names them: pending when
--timeout passes with the agent still running, unreachable when the host
stays unreachable past it, lost when the controller is gone and recorded no
end. Ctrl-C is 130, and the agent keeps running.`
}

// WaitTimeoutUsage is the wait verbs' --timeout flag.
const WaitTimeoutUsage = "give up after `D` with the agent still running (exit 255, code pending; 0: wait as long as it runs)"
