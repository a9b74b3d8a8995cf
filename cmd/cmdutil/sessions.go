package cmdutil

import (
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/executor"
)

// SessionState is a session's state for a table: with the age of what
// was recorded when the host may have moved on since (older than
// executor.StaleAfter), and marked when a refresh could not ask.
func SessionState(v *executor.SessionView, now time.Time) string {
	var notes []string
	if v.Stale(now) {
		notes = append(notes, "recorded "+AgoFrom(v.StateRecordedAt, now))
	}
	if v.RefreshErr != nil || v.RefreshError != nil {
		notes = append(notes, "not refreshed")
	}
	switch len(notes) {
	case 0:
		return string(v.State)
	case 1:
		return fmt.Sprintf("%s (%s)", v.State, notes[0])
	}
	return fmt.Sprintf("%s (%s, %s)", v.State, notes[0], notes[1])
}

// FillRefreshErrors gives each session a refresh could not ask about
// its JSON error (code, message, hint).
func FillRefreshErrors(vs []executor.SessionView) {
	for i := range vs {
		if err := vs[i].RefreshErr; err != nil {
			info := Classify(err)
			vs[i].RefreshError = &executor.ErrorView{Code: info.Code, Message: err.Error(), Hint: info.Hint}
		}
	}
}

// RefreshOutcome prints each distinct refresh failure once on stderr
// (unless asJSON: the rows carry them) and says how the command ends:
// ItemsOutcome over the sessions asked, so 3 when some hosts answered and
// the failure's own exit (7 for an unreachable host) when none did.
func RefreshOutcome(ios *IOStreams, vs []executor.SessionView, asJSON bool) error {
	var errs []error
	asked, printed := 0, map[string]bool{}
	for _, v := range vs {
		if v.Asked {
			asked++
		}
		if v.RefreshErr == nil {
			continue
		}
		errs = append(errs, v.RefreshErr)
		msg := v.RefreshErr.Error()
		if asJSON || printed[msg] {
			continue
		}
		printed[msg] = true
		fmt.Fprintf(ios.ErrOut, "not refreshed: %s\n", SafeText(msg))
		if hint := Classify(v.RefreshErr).Hint; hint != "" {
			fmt.Fprintf(ios.ErrOut, "  hint: %s\n", SafeText(hint))
		}
	}
	return ItemsOutcome(errs, asked, "sessions")
}

// RuntimeLeft is how long a bounded session has until its max_runtime, to
// the second ("0s" once it has passed).
func RuntimeLeft(at, now time.Time) string {
	return max(at.Sub(now), 0).Round(time.Second).String()
}
