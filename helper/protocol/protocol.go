// Package protocol is what the CLI and the helper it runs on a host say to
// each other: JSON requests on the helper's stdin, one per line (where
// secrets may travel: never argv, never disk), each answered on stdout by
// zero or more progress lines and then one JSON answer, in order. A CLI
// may send its next request once it has read an answer, so that a launch
// is one helper process however many steps it takes, or several at once:
// they are answered in turn. Both halves encode
// and decode through this package: the client (internal/remote, the
// executor) and the server (helper). Every request carries the protocol
// version, so a CLI never talks to a helper of another protocol
// (docs/architecture.md, "The CLI and its helper").
//
// The operations' own requests and answers are the types of the packages
// that carry them out (taskdir, reclaim, controller) and, for what the
// helper composes itself, those of messages.go.
package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// protocol is a string so that a test can build a helper of another
// protocol with -ldflags -X; Protocol parses it.
var protocol = "6"

// Protocol is the version of this protocol. Bump it whenever a request or
// answer changes shape or meaning.
func Protocol() int {
	n, err := strconv.Atoi(protocol)
	if err != nil {
		panic("protocol: bad protocol " + protocol)
	}
	return n
}

// Operations the helper serves.
const (
	OpVersion         = "version"          // -> VersionInfo
	OpPrepare         = "prepare"          // taskdir.PrepareRequest -> taskdir.PrepareResult
	OpRunScript       = "run-script"       // taskdir.RunScriptRequest -> taskdir.RunScriptResult
	OpControllerStart = "controller-start" // ControllerStart -> Started
	OpControllerProbe = "controller-probe" // SessionRequest -> controller.Identity
	OpControllerKill  = "controller-kill"  // SessionRequest -> controller.Identity
	OpSessionFiles    = "session-files"    // SessionRequest -> SessionFiles
	OpSessionsProbe   = "sessions-probe"   // SessionsRequest -> SessionsReport: many sessions, one call
	OpReclaimProve    = "reclaim-prove"    // reclaim.Request -> reclaim.Report: proof only, nothing touched
	OpReclaimApply    = "reclaim-apply"    // reclaim.Request -> reclaim.Report: proof again, then removal
	OpReclaimList     = "reclaim-list"     // reclaim.ListRequest -> reclaim.Listing, and with Apply its removals
	OpHelperPrune     = "helper-prune"     // reclaim.HelpersRequest -> reclaim.HelpersReport: old helper versions
	// OpRelay connects to a port of the host's loopback; after its answer
	// the rest of the helper's stdin and stdout are that connection's
	// bytes, for hosts whose SSH server forwards no ports.
	OpRelay = "relay" // RelayRequest -> {}, then raw bytes both ways
	// OpCancel is never answered: it asks the helper to stop the request
	// it is serving, when that one is Cancellable (its answer still comes).
	// A helper serving nothing, or something else, passes over it.
	OpCancel = "cancel"
)

// Cancellable operations stop what they started on the host when the
// CLI cancels them: prepare and run-script only make or check a task
// directory, so there is nothing half-done that a later launch does not
// redo; a listing that removes, and an apply, stop between directories
// as when the call's time runs out (a directory renamed for its removal
// and not yet emptied gets its name back, one being emptied finishes),
// and answer with what they removed, so an interrupted reclaim reports
// every removal.
func Cancellable(op string) bool {
	switch op {
	case OpPrepare, OpRunScript, OpReclaimList, OpReclaimApply:
		return true
	}
	return false
}

// Error codes of the protocol itself. The operations add their own, which
// stay with the package that raises them (taskdir's Code constants, which
// reclaim raises too): this package carries controller's types, and
// controller builds on taskdir, so taskdir cannot import it.
const (
	CodeBadRequest = "bad_request"
	CodeProtocol   = "protocol_mismatch"
	CodeIO         = "io_error"
)

// MaxRequest bounds a request: a few KiB even with a large environment.
const MaxRequest = 16 << 20

// Error is a failed operation as the CLI sees it.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Protocol is the helper's protocol, sent with CodeProtocol.
	Protocol int `json:"protocol,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Progress is a line the helper sends before its answer during a long
// operation.
type Progress struct {
	Step  string `json:"step"`
	Bytes int64  `json:"bytes,omitempty"`
	Line  string `json:"line,omitempty"` // with StepOutput: a line of a script's output, masked
}

// head is every request's and answer's envelope.
type head struct {
	V        int       `json:"v,omitempty"`
	Op       string    `json:"op,omitempty"`
	OK       *bool     `json:"ok,omitempty"`
	Error    *Error    `json:"error,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
}

// EncodeRequest renders req (a JSON object) as the request for op.
func EncodeRequest(op string, req any) ([]byte, error) {
	fields, err := objectFields(req)
	if err != nil {
		return nil, err
	}
	fields["v"], _ = json.Marshal(Protocol())
	fields["op"], _ = json.Marshal(op)
	return json.Marshal(fields)
}

// RequestHead reads the protocol version and the operation a request
// names; the rest of it is the operation's to decode.
func RequestHead(b []byte) (version int, op string, err error) {
	var h head
	if err := json.Unmarshal(b, &h); err != nil {
		return 0, "", err
	}
	return h.V, h.Op, nil
}

// EncodeAnswer flattens res into the answer next to "ok", or encodes the
// failure when fail is not nil.
func EncodeAnswer(res any, fail *Error) ([]byte, error) {
	if fail != nil {
		return json.Marshal(struct {
			OK    bool   `json:"ok"`
			Error *Error `json:"error"`
		}{false, fail})
	}
	fields, err := objectFields(res)
	if err != nil {
		return nil, err
	}
	fields["ok"] = json.RawMessage("true")
	return json.Marshal(fields)
}

// EncodeProgress renders p as a progress line.
func EncodeProgress(p Progress) []byte {
	line, _ := json.Marshal(struct {
		Progress Progress `json:"progress"`
	}{p})
	return line
}

func objectFields(v any) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if v == nil {
		return fields, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("protocol: %T is not a JSON object", v)
	}
	return fields, nil
}
