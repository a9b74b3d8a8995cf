// Package hostops is the one protocol between the CLI and the helper it
// runs on a host: JSON requests on the helper's stdin, one per line (where
// secrets may travel: never argv, never disk), each answered on stdout by
// zero or more progress lines and then one JSON answer, in order. A CLI
// may send its next request once it has read an answer, so that a launch
// is one helper process however many steps it takes. Both sides encode
// and decode through this package, and every request carries the
// protocol version, so a CLI never talks to a helper of another protocol
// (docs/architecture.md, "The CLI and its helper").
package hostops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// protocol is a string so that a test can build a helper of another
// protocol with -ldflags -X; Protocol parses it.
var protocol = "4"

// Protocol is the version of this protocol. Bump it whenever a request or
// answer changes shape or meaning.
func Protocol() int {
	n, err := strconv.Atoi(protocol)
	if err != nil {
		panic("hostops: bad protocol " + protocol)
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
	OpReclaimList     = "reclaim-list"     // reclaim.ListRequest -> reclaim.Listing
)

// Error codes of the protocol itself; each operation adds its own (see
// taskdir's Code constants).
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

// encodeAnswer flattens res into the answer next to "ok", or encodes the
// failure.
func encodeAnswer(res any, opErr error) ([]byte, error) {
	if opErr != nil {
		return json.Marshal(struct {
			OK    bool   `json:"ok"`
			Error *Error `json:"error"`
		}{false, asError(opErr)})
	}
	fields, err := objectFields(res)
	if err != nil {
		return nil, err
	}
	fields["ok"] = json.RawMessage("true")
	return json.Marshal(fields)
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
		return nil, fmt.Errorf("hostops: %T is not a JSON object", v)
	}
	return fields, nil
}

// ReadAnswer reads the helper's output: progress lines (each passed to
// progress, if not nil) and then the answer, decoded into res; a failed
// operation comes back as *Error.
func ReadAnswer(r io.Reader, res any, progress func(Progress)) error {
	return NewAnswers(r).Next(res, progress)
}

// Answers reads a helper's answers, in order, from its output.
type Answers struct {
	br *bufio.Reader
}

// NewAnswers reads answers from r.
func NewAnswers(r io.Reader) *Answers { return &Answers{br: bufio.NewReader(r)} }

// Next reads the next answer into res, as ReadAnswer does; an answer and
// its progress lines together are at most MaxRequest bytes.
func (a *Answers) Next(res any, progress func(Progress)) error {
	budget := MaxRequest
	for {
		line, err := readLine(a.br, budget)
		budget -= len(line)
		if errors.Is(err, errTooLong) {
			return fmt.Errorf("the helper's answer is larger than %d bytes", MaxRequest)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				return fmt.Errorf("the helper sent no answer")
			}
			continue
		}
		var h head
		if jerr := json.Unmarshal(line, &h); jerr != nil {
			return fmt.Errorf("unreadable answer from the helper: %v", jerr)
		}
		switch {
		case h.Progress != nil && h.OK == nil:
			if progress != nil {
				progress(*h.Progress)
			}
			continue
		case h.OK == nil:
			return fmt.Errorf("the helper's answer has neither ok nor error: %.200q", line)
		case !*h.OK:
			if h.Error == nil {
				return &Error{Code: CodeIO, Message: "the helper failed without saying why"}
			}
			return h.Error
		}
		if res == nil {
			return nil
		}
		return json.Unmarshal(line, res)
	}
}

var errTooLong = errors.New("line too long")

// readLine reads up to and including the next newline, or to the end of
// the input (then with io.EOF), refusing a line longer than max.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, errTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
