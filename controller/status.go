// Package controller is the session controller that runs on the remote host:
// one detached process per session that supervises the agent, records its
// status in the session dir and serves a token-guarded loopback API. It
// depends on nothing of the local side.
package controller

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// Session states, as recorded in status.json.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateExited   = "exited"  // the agent ended on its own
	StateStopped  = "stopped" // the agent ended because it was asked to
)

// Files in the session dir.
const (
	pidFile     = "controller.pid"
	portFile    = "controller.port"
	logFile     = "controller.log"
	statusFile  = "status.json"
	receiptsDir = "receipts"
)

// Status is the session's state, served by /v1/status and kept in status.json.
type Status struct {
	SessionID     string     `json:"session_id"`
	State         string     `json:"state"`
	ExitCode      *int       `json:"exit_code"`        // set when the agent exited normally
	Signal        string     `json:"signal,omitempty"` // e.g. "SIGTERM" when a signal ended the agent
	Error         string     `json:"error,omitempty"`  // why the agent could not be started
	AgentPID      int        `json:"agent_pid"`
	ControllerPID int        `json:"controller_pid"`
	Port          int        `json:"port"`
	StopGrace     string     `json:"stop_grace"`
	StartedAt     time.Time  `json:"started_at"`
	EndedAt       *time.Time `json:"ended_at"`
	Sealed        bool       `json:"sealed"`
	LogBytes      int64      `json:"log_bytes"`
	// LogGeneration names the log LogBytes measures: a rotation starts
	// a new one (see LogRotateAt).
	LogGeneration string `json:"log_generation,omitempty"`
	// LogLostBytes is output (the agent's or the controller's own) that
	// could not be written to controller.log, e.g. because the disk was
	// full; the log says where with a "bytes lost" line.
	LogLostBytes  int64  `json:"log_lost_bytes"`
	LogLostReason string `json:"log_lost_reason,omitempty"` // the last write error
	// EndedProcesses are the processes of the agent's group still alive
	// when the session ended (the agent's own end, a stop, a drain, a
	// bound), which the controller then ended; GroupKilled says SIGKILL
	// was needed after the grace.
	EndedProcesses []Process `json:"ended_processes,omitempty"`
	GroupKilled    bool      `json:"group_killed,omitempty"`
	// MaxRuntimeAt is when the agent is stopped, when max_runtime bounds
	// it; StopReason says which bound stopped it (StopMaxRuntime,
	// StopIdleTimeout), "" when none did.
	MaxRuntimeAt *time.Time `json:"max_runtime_at,omitempty"`
	StopReason   string     `json:"stop_reason,omitempty"`
}

// Why a bound stopped the agent.
const (
	StopMaxRuntime  = "max_runtime"
	StopIdleTimeout = "idle_timeout"
)

// Process is one process of the agent's group: its pid and the kernel's
// name for it (never its arguments).
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

// ReadStatusFile reads status.json, for when the controller is gone. It is
// the last state the controller recorded; a controller killed behind its back
// leaves "running" here, so check Probe before trusting a live state.
func ReadStatusFile(sessionDir string) (Status, error) {
	var st Status
	b, err := fsx.ReadFile(filepath.Join(sessionDir, statusFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("decode %s: %w", statusFile, err)
	}
	return st, nil
}

func writeJSONAtomic(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(dir, name), append(b, '\n'), true)
}
