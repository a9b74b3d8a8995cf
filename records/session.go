package records

import (
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// KindSession is the store kind of session records.
const KindSession state.Kind = "session"

// SessionState is what is known of a session's controller and agent.
type SessionState string

const (
	SessionStarting SessionState = "starting" // launch under way; a controller may or may not exist
	SessionRunning  SessionState = "running"  // a controller answered
	SessionExited   SessionState = "exited"   // the agent ended by itself
	SessionStopped  SessionState = "stopped"  // the agent was stopped (session stop, drain)
	SessionLost     SessionState = "lost"     // the controller is gone and recorded no end
	SessionFailed   SessionState = "failed"   // never started: the launch failed before any controller ran
)

// SessionStates lists every state.
var SessionStates = []SessionState{SessionStarting, SessionRunning, SessionExited, SessionStopped, SessionLost, SessionFailed}

// sessionMoves: a lost session may still be settled by what its
// controller wrote down, when the host is asked again.
var sessionMoves = moves[SessionState]{
	SessionStarting: {SessionRunning, SessionExited, SessionStopped, SessionLost, SessionFailed},
	SessionRunning:  {SessionExited, SessionStopped, SessionLost},
	SessionLost:     {SessionExited, SessionStopped},
	SessionExited:   nil,
	SessionStopped:  nil,
	SessionFailed:   nil,
}

// CanMove reports whether the table allows s -> to.
func (s SessionState) CanMove(to SessionState) bool { return sessionMoves.allowed(s, to) }

// Ended states: no agent of this session can be running.
func (s SessionState) Ended() bool {
	return s == SessionExited || s == SessionStopped || s == SessionFailed
}

// Session is one controller run in a task directory.
type Session struct {
	ID          string       `json:"id"`
	TaskID      string       `json:"task_id"`
	Host        string       `json:"host"`
	State       SessionState `json:"state"`
	ExitCode    *int         `json:"exit_code"`
	Signal      string       `json:"signal,omitempty"` // what ended the agent when no exit code did
	PID         int          `json:"pid"`
	StartTime   uint64       `json:"pid_start_time"`
	RemotePort  int          `json:"remote_port"`
	SessionDir  string       `json:"session_dir"`
	Command     string       `json:"command"`
	OperationID string       `json:"operation_id"`
	Error       string       `json:"error"`
	StartedAt   time.Time    `json:"started_at"`
	EndedAt     *time.Time   `json:"ended_at"`
	// CheckedAt is when the host last told us this state (nil: only the
	// launch recorded it).
	CheckedAt *time.Time `json:"checked_at,omitempty"`
	// Launcher is the process starting the session; a session still
	// starting after it died was interrupted.
	Launcher *state.Holder `json:"launcher,omitempty"`
	// ControllerStartAt is when the launch asked the host to start the
	// controller: without it, none can be running.
	ControllerStartAt *time.Time `json:"controller_start_at,omitempty"`
	// LogLostBytes is output the host could not write to the session's
	// log (a full disk), as its controller last reported.
	LogLostBytes int64 `json:"log_lost_bytes,omitempty"`
	// Receipt is the drain receipt of the last teardown, when one was given.
	Receipt *Receipt `json:"receipt,omitempty"`
	// Observation is what asking the host last found, kept apart from the
	// state: a state's name (running, exited, stopped, lost), missing
	// (the host answered and the session's directory is gone) or
	// unreachable (no answer: the state stays as it was). ObservedAt is
	// when (docs/contract.md, "Observations").
	Observation string     `json:"observation,omitempty"`
	ObservedAt  *time.Time `json:"observed_at,omitempty"`
	// EndedProcesses are the agent's processes still alive when the
	// session ended, which its controller ended; GroupKilled: some
	// outlived the grace and were killed.
	EndedProcesses []Process `json:"ended_processes,omitempty"`
	GroupKilled    bool      `json:"group_killed,omitempty"`
	// MaxRuntimeAt is when its controller stops the agent (max_runtime);
	// StopReason is the bound that stopped it (max_runtime, idle_timeout).
	MaxRuntimeAt *time.Time `json:"max_runtime_at,omitempty"`
	StopReason   string     `json:"stop_reason,omitempty"`
}

// Process is a process on a host: its pid and the kernel's name for it.
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

// The observations that are no state's name.
const (
	ObservedMissing     = "missing"
	ObservedUnreachable = "unreachable"
)

// Move sets the state if the table allows it.
func (s *Session) Move(to SessionState) error {
	if err := checkMove(sessionMoves, "session", s.ID, s.State, to); err != nil {
		return err
	}
	s.State = to
	return nil
}

// Receipt is a controller's proof that it sealed and stopped its agent
// for one cleanup claim, verified with the session token before it is
// recorded.
type Receipt struct {
	ClaimID   string       `json:"claim_id"`
	State     SessionState `json:"state"`
	ExitCode  *int         `json:"exit_code,omitempty"`
	Killed    bool         `json:"killed,omitempty"` // the agent's process group outlived the grace: SIGKILL
	DrainedAt time.Time    `json:"drained_at"`
	Proof     string       `json:"proof"`
}

// Short is the receipt as a table shows it.
func (r *Receipt) Short() string {
	if r == nil || len(r.Proof) < 12 {
		return ""
	}
	return r.Proof[:12]
}
