package cmdutil

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/records"
)

// The rule for commands that follow an agent to its end (`task launch
// --follow`, `session logs -f`, `session wait`, `task wait`), as ssh and
// `task exec` have it: a failure before the agent started keeps its own
// exit; once it started, the agent's status passes through and every
// failure of the tool itself is ExitToolFailed, the envelope naming what
// it was. Ctrl-C stays 130 (docs/contract.md, "Following an agent").

// ExitToolFailed is the tool's own failure after the agent started.
var ExitToolFailed = Exit{255, "", "the tool failed while following or waiting for a started agent (the error's code says how: unreachable, lost, pending); the agent's own status passes through, a signal as 128+N"}

// codeLost names a session that ended nobody knows how.
const codeLost = "lost"

// Followed is how a command that followed a started agent ends: err (the
// tool's failure) as ExitToolFailed, else as the agent ended (AgentExit).
func Followed(s *records.Session, err error) error {
	if err != nil {
		return ToolFailed(err)
	}
	return AgentExit(s)
}

// ToolFailed is err, a failure of the tool after the agent started, as
// ExitToolFailed with err's code, message and hint; Ctrl-C stays itself.
func ToolFailed(err error) error {
	info := Classify(err)
	if info.Exit == ExitInterrupted.Status || info.Exit == ExitToolFailed.Status {
		return err
	}
	out := error(&ExitCodeError{Code: ExitToolFailed.Status, JSON: info.Code, Msg: err.Error()})
	if info.Hint != "" {
		out = WithHint(out, info.Hint)
	}
	return out
}

// AgentExit is how the agent ended, as this command's exit: its own code,
// 128+N for a signal (as shells report it), ExitToolFailed `lost` when
// the session was lost and nobody knows, 1 when it never ran.
func AgentExit(s *records.Session) error {
	switch {
	case s.ExitCode != nil && *s.ExitCode != 0:
		return &ExitCodeError{Code: *s.ExitCode, JSON: ExitError.Code}
	case s.Signal != "":
		code := 128 + int(unix.SignalNum(s.Signal))
		if code == 128 {
			code = ExitError.Status
		}
		return &ExitCodeError{Code: code, JSON: ExitError.Code, Msg: fmt.Sprintf("the agent of session %s was killed by %s", s.ID, s.Signal)}
	case s.State == records.SessionLost:
		return WithHint(&ExitCodeError{Code: ExitToolFailed.Status, JSON: codeLost, Msg: fmt.Sprintf("session %s was lost: %s", s.ID, s.Error)},
			fmt.Sprintf("`kandev-exec session show %s`; the task directory stays: `kandev-exec task resume %s`", s.ID, s.TaskID))
	case s.State == records.SessionFailed:
		return WithHint(fmt.Errorf("session %s never started its agent: %s", s.ID, s.Error), fmt.Sprintf("`kandev-exec task show %s` says why", s.TaskID))
	}
	return nil
}
