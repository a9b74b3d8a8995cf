package helper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/taskdir"
)

func versionInfo() protocol.VersionInfo {
	return protocol.VersionInfo{Protocol: protocol.Protocol(), Version: buildinfo.Version, Commit: buildinfo.CommitID(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// handler runs one operation on the request's bytes.
type handler func(ctx context.Context, b []byte, progress func(protocol.Progress)) (any, error)

// op adapts a typed operation.
func op[Req any](run func(context.Context, Req) (any, error)) handler {
	return withProgress(func(ctx context.Context, r Req, _ func(protocol.Progress)) (any, error) { return run(ctx, r) })
}

// withProgress adapts a typed operation that reports progress.
func withProgress[Req any](run func(context.Context, Req, func(protocol.Progress)) (any, error)) handler {
	return func(ctx context.Context, b []byte, progress func(protocol.Progress)) (any, error) {
		var req Req
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, &protocol.Error{Code: protocol.CodeBadRequest, Message: fmt.Sprintf("decode request: %v", err)}
		}
		return run(ctx, req, progress)
	}
}

var handlers = map[string]handler{
	protocol.OpVersion: op(func(context.Context, struct{}) (any, error) { return versionInfo(), nil }),
	protocol.OpPrepare: withProgress(prepare),
	protocol.OpRunScript: withProgress(func(ctx context.Context, r taskdir.RunScriptRequest, progress func(protocol.Progress)) (any, error) {
		return taskdir.RunScript(ctx, r, func(line string) { progress(protocol.Progress{Step: protocol.StepOutput, Line: line}) })
	}),
	protocol.OpControllerStart: withProgress(startController),
	protocol.OpControllerProbe: op(func(_ context.Context, r protocol.SessionRequest) (any, error) {
		return identity(controller.Probe(r.SessionDir, r.StartTime))
	}),
	protocol.OpControllerKill: op(func(_ context.Context, r protocol.SessionRequest) (any, error) {
		return identity(controller.KillIfOurs(r.SessionDir, r.StartTime))
	}),
	protocol.OpSessionFiles: op(func(_ context.Context, r protocol.SessionRequest) (any, error) {
		return sessionFiles(r.SessionDir)
	}),
	protocol.OpSessionsProbe: op(func(_ context.Context, r protocol.SessionsRequest) (any, error) {
		return probeSessions(r), nil
	}),
	protocol.OpReclaimProve: op(func(ctx context.Context, r reclaim.Request) (any, error) { return reclaim.Prove(ctx, r) }),
	protocol.OpReclaimApply: op(func(ctx context.Context, r reclaim.Request) (any, error) { return reclaim.Apply(ctx, r) }),
	protocol.OpReclaimList:  op(func(ctx context.Context, r reclaim.ListRequest) (any, error) { return reclaim.ListAndApply(ctx, r) }),
	protocol.OpHelperPrune: op(func(ctx context.Context, r reclaim.HelpersRequest) (any, error) {
		return reclaim.PruneHelpers(ctx, r)
	}),
	protocol.OpRelay: op(openRelay),
}

// prepare looks the agent's program up first, so that a missing one
// fails before any checkout (or, a prepare script to come, is reported
// at once), then makes or checks the task directory.
func prepare(ctx context.Context, r taskdir.PrepareRequest, progress func(protocol.Progress)) (any, error) {
	if err := taskdir.LookFirst(ctx, r.Lookup, func() { progress(protocol.Progress{Step: protocol.StepProgramMissing}) }); err != nil {
		return nil, err
	}
	return taskdir.Prepare(ctx, r)
}

// Serve answers the requests on r, one per line, in order, until r ends:
// each gets its progress lines and its answer on w before the next is
// read. Input that holds no request at all is answered as a bad one. A
// relay (OpRelay) answered ends the requests: the streams carry its
// connection from there on. It
// returns an error only when a request cannot be read or an answer
// cannot be written; a failed operation is a normal answer. Lines are
// read while a request is served, so that a cancel (protocol.OpCancel)
// reaches it; the others wait their turn.
func Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	var mu sync.Mutex
	emit := func(line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := w.Write(append(line, '\n'))
		return err
	}
	progress := func(p protocol.Progress) { _ = emit(protocol.EncodeProgress(p)) }
	in := newRequests(r)
	defer in.stop()
	for served := 0; ; {
		l := in.next()
		b, err := l.b, l.err
		switch {
		case errors.Is(err, protocol.ErrTooLong):
			return fmt.Errorf("read request: larger than %d bytes", protocol.MaxRequest)
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("read request: %w", err)
		}
		if isCancel(b) {
			b = nil // nothing is being served: there is nothing to stop
		}
		if len(bytes.TrimSpace(b)) > 0 || err != nil && served == 0 {
			var res any
			var opErr error
			if isRelay(b) {
				// Nothing is read past a relay request until it is
				// answered: the rest may be the connection's bytes.
				res, opErr = dispatch(ctx, b, progress)
				if rl, ok := res.(*relayed); ok {
					// Past this answer the streams are the connection's.
					out, _ := protocol.EncodeAnswer(nil, nil)
					if eerr := emit(out); eerr != nil {
						rl.conn.Close()
						return eerr
					}
					return rl.carry(in.handOff(err), w)
				}
				in.carryOn(err)
			} else {
				res, opErr = in.serve(ctx, l, progress)
			}
			var fail *protocol.Error
			if opErr != nil {
				fail = asError(opErr)
			}
			out, eerr := protocol.EncodeAnswer(res, fail)
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

// requestLine is one line of input, or how the input ended: at is when
// it was read, and cancelled that a cancel came while it waited its turn
// behind a Cancellable request (the caller was interrupted: it is served
// as stopped at once).
type requestLine struct {
	b         []byte
	err       error
	at        time.Time
	cancelled bool
}

// requests reads the helper's input ahead of what it serves.
type requests struct {
	lines  chan requestLine // nil once the input ended
	queued []requestLine    // read while a request was served
	done   chan struct{}
	// After a relay request the reader waits: false on relayed reads on,
	// true hands its reader (and what it buffered) over on rest.
	relayed chan bool
	rest    chan *bufio.Reader
}

func newRequests(r io.Reader) *requests {
	q := &requests{lines: make(chan requestLine), done: make(chan struct{}), relayed: make(chan bool), rest: make(chan *bufio.Reader, 1)}
	go func() {
		br := bufio.NewReader(r)
		for {
			b, err := protocol.ReadLine(br, protocol.MaxRequest)
			select {
			case q.lines <- requestLine{b: b, err: err, at: time.Now()}:
			case <-q.done:
				return
			}
			if err != nil {
				return
			}
			if isRelay(b) {
				select {
				case handOff := <-q.relayed:
					if handOff {
						q.rest <- br
						return
					}
				case <-q.done:
					return
				}
			}
		}
	}()
	return q
}

// handOff ends reading requests after a relay request was answered, and
// returns the reader the connection's bytes come on. ended is the error
// the request came with: the input ended with it, the reader is gone, and
// nothing follows.
func (q *requests) handOff(ended error) *bufio.Reader {
	if ended != nil {
		return bufio.NewReader(strings.NewReader(""))
	}
	q.relayed <- true
	return <-q.rest
}

// carryOn reads requests again after a relay request that failed (ended
// as for handOff).
func (q *requests) carryOn(ended error) {
	if ended == nil {
		q.relayed <- false
	}
}

func (q *requests) stop() { close(q.done) }

func (q *requests) next() requestLine {
	if len(q.queued) > 0 {
		l := q.queued[0]
		q.queued = q.queued[1:]
		return l
	}
	l := <-q.lines
	if l.err != nil {
		q.lines = nil
	}
	return l
}

// serve runs request l, and stops it when a cancel arrives meanwhile and
// its operation is Cancellable, with the requests of that operation that
// wait their turn (a reclaim sends one listing per root at once). Other
// lines are kept for their turn.
func (q *requests) serve(ctx context.Context, l requestLine, progress func(protocol.Progress)) (any, error) {
	b := l.b
	ctx, cancel := context.WithCancel(reclaim.Received(ctx, l.at))
	defer cancel()
	if l.cancelled {
		cancel()
	}
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := dispatch(ctx, b, progress)
		done <- answer{res, err}
	}()
	_, op, _ := protocol.RequestHead(b)
	for {
		select {
		case a := <-done:
			return a.res, a.err
		case l := <-q.lines:
			if l.err != nil {
				q.lines = nil
			}
			switch {
			case !isCancel(l.b):
				q.queued = append(q.queued, l)
			case protocol.Cancellable(op):
				cancel()
				for i := range q.queued {
					if _, qop, _ := protocol.RequestHead(q.queued[i].b); qop == op {
						q.queued[i].cancelled = true
					}
				}
			}
			if l.err != nil && isCancel(l.b) {
				q.queued = append(q.queued, requestLine{err: l.err}) // the input's end, still to be seen
			}
		}
	}
}

func isRelay(b []byte) bool {
	_, op, err := protocol.RequestHead(b)
	return err == nil && op == protocol.OpRelay
}

func isCancel(b []byte) bool {
	_, op, err := protocol.RequestHead(b)
	return err == nil && op == protocol.OpCancel
}

func dispatch(ctx context.Context, b []byte, progress func(protocol.Progress)) (any, error) {
	v, opName, err := protocol.RequestHead(b)
	if err != nil {
		return nil, &protocol.Error{Code: protocol.CodeBadRequest, Message: fmt.Sprintf("decode request: %v", err)}
	}
	if v != protocol.Protocol() {
		return nil, &protocol.Error{Code: protocol.CodeProtocol, Protocol: protocol.Protocol(),
			Message: fmt.Sprintf("this helper (kandev-exec %s) speaks protocol %d, the request is protocol %d", buildinfo.Version, protocol.Protocol(), v)}
	}
	run, ok := handlers[opName]
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeBadRequest, Message: fmt.Sprintf("unknown operation %q", opName)}
	}
	return run(ctx, b, progress)
}

// asError gives any failure the protocol's shape: a code the CLI can act
// on and a message that names what failed.
func asError(err error) *protocol.Error {
	var e *protocol.Error
	if errors.As(err, &e) {
		return e
	}
	var te *taskdir.Error
	if errors.As(err, &te) {
		return &protocol.Error{Code: te.Code, Message: te.Message}
	}
	return &protocol.Error{Code: protocol.CodeIO, Message: err.Error()}
}
