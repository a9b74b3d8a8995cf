package records

import (
	"encoding/json"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// Detail is what every event about a host, task, session or cleanup job
// carries in the journal, so that a live view (watch) and a script
// following the journal can render what happened from the journal alone,
// without reading the records. It never holds a secret value.
type Detail struct {
	Host    string `json:"host,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
	Phase   string `json:"phase,omitempty"` // the task phase, session state, host status or job state after the change
	Step    string `json:"step,omitempty"`  // a teardown step (StepDrain, StepCleanup, StepReclaim), or StepHostDrain
	Outcome string `json:"outcome,omitempty"`
	Method  string `json:"method,omitempty"` // a removal's proof methods, comma-separated
	// Proof: a removal's proof record, as kept on the task.
	Proof    *ReclaimProof `json:"proof,omitempty"`
	Receipt  string        `json:"receipt,omitempty"` // a drain receipt, short
	Reason   string        `json:"reason,omitempty"`
	By       string        `json:"by,omitempty"`
	Until    *time.Time    `json:"until,omitempty"` // a quarantine's end
	Attempts int           `json:"attempts,omitempty"`
	NextAt   *time.Time    `json:"next_at,omitempty"`
	Error    string        `json:"error,omitempty"`
	Message  string        `json:"message,omitempty"` // one line for people
	// Observation and ObservedAt: what asking a session's host last
	// found, and when (a session's events only).
	Observation string     `json:"observation,omitempty"`
	ObservedAt  *time.Time `json:"observed_at,omitempty"`
}

// Event builds the journal event of a change: typ is "<kind>.<what>",
// e.g. "task.draining", "host.quarantined", "job.retry_wait".
func Event(typ string, d Detail) state.Event {
	b, _ := json.Marshal(d)
	return state.Event{Type: typ, Detail: b}
}

// DetailOf reads an entry's detail; an entry written without one (or by
// an older kandev-exec) gives the zero Detail.
func DetailOf(e state.Entry) Detail {
	var d Detail
	if len(e.Detail) > 0 {
		_ = json.Unmarshal(e.Detail, &d)
	}
	return d
}
