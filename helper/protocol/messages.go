package protocol

import "github.com/kdlbs/kandev-exec/controller"

// VersionInfo is the answer to OpVersion, and what the helper's
// `version` prints.
type VersionInfo struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Platform string `json:"platform"`
}

// SessionRequest names a session directory, and the controller start
// time recorded for it (0 when none was recorded).
type SessionRequest struct {
	SessionDir string `json:"session_dir"`
	StartTime  uint64 `json:"start_time"`
}

// SessionFiles is what a session directory says of its controller, read
// without asking the controller: recovery of an interrupted launch.
type SessionFiles struct {
	PID    int                `json:"pid"`  // 0: no pid file, no controller ever ran there
	Port   int                `json:"port"` // 0: it never bound
	Status *controller.Status `json:"status,omitempty"`
	// Missing: the session's directory does not exist (the rest is zero).
	Missing bool `json:"missing,omitempty"`
}

// SessionsRequest asks about many sessions of one host in one call (a
// refresh of every session there).
type SessionsRequest struct {
	Sessions []SessionRequest `json:"sessions"`
}

// SessionsReport answers a SessionsRequest, a report per session in the
// order asked.
type SessionsReport struct {
	Sessions []SessionReport `json:"sessions"`
}

// SessionReport is what the host shows of one session: its controller's
// identity and what its directory holds (how the agent ended, once it
// did: a controller lingers a while after its agent). Error says why this
// one session could not be read; the others are still answered.
type SessionReport struct {
	Identity controller.Identity `json:"identity"`
	Files    *SessionFiles       `json:"files,omitempty"`
	Error    string              `json:"error,omitempty"`
}

// ControllerStart is controller-start's request: the controller's, and
// a nonce for the proof that it answers.
type ControllerStart struct {
	controller.StartRequest
	// Nonce, when set, is answered by the started controller's health
	// proof, fetched on the host's loopback: the CLI, which made the
	// token, checks it without a connection of its own.
	Nonce string `json:"nonce,omitempty"`
}

// Started is controller-start's answer.
type Started struct {
	controller.StartResponse
	Health *controller.Health `json:"health,omitempty"` // the answer to the request's nonce
	// Unproven says why there is no Health: the controller runs (PID)
	// but did not answer.
	Unproven string `json:"unproven,omitempty"`
}

// StepOutput is run-script's progress line for each line its script
// prints (Progress.Line).
const StepOutput = "output"

// StepProgramMissing is prepare's progress line when the agent's program
// is not there yet and a prepare script may install it.
const StepProgramMissing = "program-missing"

// StepProof is the progress step of controller-start while the helper
// asks the controller it started for its proof.
const StepProof = "Connecting to controller"

// RelayRequest names the port on the host's loopback (a session's
// controller) that OpRelay connects to.
type RelayRequest struct {
	Port int `json:"port"`
}
