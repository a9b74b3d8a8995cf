package hostops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// VersionInfo is the answer to OpVersion, and what `version` prints.
type VersionInfo struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Platform string `json:"platform"`
}

func versionInfo() VersionInfo {
	return VersionInfo{Protocol: Protocol(), Version: buildinfo.Version, Commit: buildinfo.CommitID(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
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

func probeSessions(r SessionsRequest) SessionsReport {
	out := SessionsReport{Sessions: make([]SessionReport, len(r.Sessions))}
	for i, s := range r.Sessions {
		rep := &out.Sessions[i]
		id, err := identity(controller.Probe(s.SessionDir, s.StartTime))
		if err != nil {
			rep.Error = err.Error()
			continue
		}
		rep.Identity = id
		files, err := sessionFiles(s.SessionDir)
		if err != nil {
			rep.Error = err.Error()
			continue
		}
		rep.Files = files
	}
	return out
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

// StepProof is the progress step of controller-start while the helper
// asks the controller it started for its proof.
const StepProof = "Connecting to controller"

// proofWait bounds that question: the controller is serving by the time
// it reports ready.
const proofWait = 15 * time.Second

func startController(ctx context.Context, r ControllerStart, progress func(Progress)) (any, error) {
	started, err := controller.Start(r.StartRequest)
	if err != nil {
		return nil, err
	}
	out := Started{StartResponse: *started}
	if r.Nonce == "" {
		return out, nil
	}
	progress(Progress{Step: StepProof})
	ctx, cancel := context.WithTimeout(ctx, proofWait)
	defer cancel()
	h, err := controller.NewClient(nil, started.Port, r.Token).Prove(ctx, r.Nonce)
	if err != nil {
		out.Unproven = err.Error()
	} else {
		out.Health = &h
	}
	return out, nil
}

// handler runs one operation on the request's bytes.
type handler func(ctx context.Context, b []byte, progress func(Progress)) (any, error)

// op adapts a typed operation.
func op[Req any](run func(context.Context, Req) (any, error)) handler {
	return withProgress(func(ctx context.Context, r Req, _ func(Progress)) (any, error) { return run(ctx, r) })
}

// withProgress adapts a typed operation that reports progress.
func withProgress[Req any](run func(context.Context, Req, func(Progress)) (any, error)) handler {
	return func(ctx context.Context, b []byte, progress func(Progress)) (any, error) {
		var req Req
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("decode request: %v", err)}
		}
		return run(ctx, req, progress)
	}
}

var handlers = map[string]handler{
	OpVersion: op(func(context.Context, struct{}) (any, error) { return versionInfo(), nil }),
	OpPrepare: op(func(ctx context.Context, r taskdir.PrepareRequest) (any, error) { return taskdir.Prepare(ctx, r) }),
	OpRunScript: op(func(ctx context.Context, r taskdir.RunScriptRequest) (any, error) {
		return taskdir.RunScript(ctx, r)
	}),
	OpControllerStart: withProgress(startController),
	OpControllerProbe: op(func(_ context.Context, r SessionRequest) (any, error) {
		return identity(controller.Probe(r.SessionDir, r.StartTime))
	}),
	OpControllerKill: op(func(_ context.Context, r SessionRequest) (any, error) {
		return identity(controller.KillIfOurs(r.SessionDir, r.StartTime))
	}),
	OpSessionFiles:  op(func(_ context.Context, r SessionRequest) (any, error) { return sessionFiles(r.SessionDir) }),
	OpSessionsProbe: op(func(_ context.Context, r SessionsRequest) (any, error) { return probeSessions(r), nil }),
	OpReclaimProve:  op(func(ctx context.Context, r reclaim.Request) (any, error) { return reclaim.Prove(ctx, r) }),
	OpReclaimApply:  op(func(ctx context.Context, r reclaim.Request) (any, error) { return reclaim.Apply(ctx, r) }),
	OpReclaimList:   op(func(ctx context.Context, r reclaim.ListRequest) (any, error) { return reclaim.List(ctx, r) }),
}

// identity: no pid file means the session dir is gone or no controller
// ever ran in it, and a controller whose dir is gone stops itself:
// nothing alive to prove.
func identity(id controller.Identity, err error) (controller.Identity, error) {
	if errors.Is(err, os.ErrNotExist) {
		return controller.Identity{}, nil
	}
	return id, err
}

func sessionFiles(dir string) (*SessionFiles, error) {
	pid, port, err := controller.ReadPIDPort(dir)
	if err != nil {
		return nil, err
	}
	out := &SessionFiles{PID: pid, Port: port}
	if st, err := controller.ReadStatusFile(dir); err == nil {
		out.Status = &st
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

// Serve answers the requests on r, one per line, in order, until r ends:
// each gets its progress lines and its answer on w before the next is
// read. Input that holds no request at all is answered as a bad one. It
// returns an error only when a request cannot be read or an answer
// cannot be written; a failed operation is a normal answer.
func Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	var mu sync.Mutex
	emit := func(line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := w.Write(append(line, '\n'))
		return err
	}
	progress := func(p Progress) {
		line, _ := json.Marshal(struct {
			Progress Progress `json:"progress"`
		}{p})
		_ = emit(line)
	}
	br := bufio.NewReader(r)
	for served := 0; ; {
		b, err := readLine(br, MaxRequest)
		switch {
		case errors.Is(err, errTooLong):
			return fmt.Errorf("read request: larger than %d bytes", MaxRequest)
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("read request: %w", err)
		}
		if len(bytes.TrimSpace(b)) > 0 || err != nil && served == 0 {
			res, opErr := dispatch(ctx, b, progress)
			out, eerr := encodeAnswer(res, opErr)
			if eerr != nil {
				return eerr
			}
			if eerr := emit(out); eerr != nil {
				return eerr
			}
			served++
		}
		if err != nil {
			return nil
		}
	}
}

func dispatch(ctx context.Context, b []byte, progress func(Progress)) (any, error) {
	var h head
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("decode request: %v", err)}
	}
	if h.V != Protocol() {
		return nil, &Error{Code: CodeProtocol, Protocol: Protocol(),
			Message: fmt.Sprintf("this helper (kandev-exec %s) speaks protocol %d, the request is protocol %d", buildinfo.Version, Protocol(), h.V)}
	}
	run, ok := handlers[h.Op]
	if !ok {
		return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("unknown operation %q", h.Op)}
	}
	return run(ctx, b, progress)
}

// asError gives any failure the protocol's shape: a code the CLI can act
// on and a message that names what failed.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var te *taskdir.Error
	if errors.As(err, &te) {
		return &Error{Code: te.Code, Message: te.Message}
	}
	return &Error{Code: CodeIO, Message: err.Error()}
}
