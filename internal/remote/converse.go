package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/ssh"
)

// serveMarker ends a bootstrap's marker lines: what follows on stdout is
// the helper speaking helper/protocol.
const serveMarker = "serve=yes"

// maxMarkerLine bounds one marker line of a bootstrap (a hostile host
// could send one without end).
const maxMarkerLine = 64 << 10

// Conversation is one helper process on a host serving requests in order
// (helper/protocol), reached through one SSH command: a bootstrap script
// that prints its marker lines, checks the path to the helper and execs
// it.
// The command and the first request leave together (ssh.StreamEager).
type Conversation struct {
	host    string
	KV      map[string]string // the bootstrap's marker lines
	Served  bool              // the helper was exec'd: answers follow
	answers *protocol.Answers
	op      string // the operation whose answer comes next

	mu     sync.Mutex  // msgs, closed and op, also used when the caller's context ends
	msgs   chan []byte // requests, written in order by one goroutine
	closed bool        // msgs is closed: the helper's stdin ends
	served bool        // the helper reads msgs
	cancel context.CancelFunc
	done   chan struct{}
	err    error // how the command ended, once done is closed
	stderr lockedBuffer
}

// Converse runs script on c with first as the first request on its
// stdin (or the first few, a line each: op names them all), and reads the bootstrap's markers until the helper takes over
// (Served) or the script ends (not served; KV then says why). The markers
// must come within bound; a refused path is a *HostPathError. When ctx
// ends the command ends with it, except while a Cancellable request is
// served: the helper is asked to stop it, and its answer has
// interruptGrace to come.
func Converse(ctx context.Context, c *ssh.Client, host, script, op string, first []byte, bound time.Duration) (*Conversation, error) {
	caller := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cv := &Conversation{host: host, KV: map[string]string{}, op: op, msgs: make(chan []byte, 4), cancel: cancel, done: make(chan struct{})}
	go func() {
		err := c.StreamEager(ctx, script, inR, outW, &cv.stderr, bound)
		cv.err = err
		inR.CloseWithError(errors.New("the command ended"))
		outW.Close()
		close(cv.done)
	}()
	go func() {
		for m := range cv.msgs {
			if _, err := inW.Write(m); err != nil {
				break
			}
		}
		inW.Close()
		for range cv.msgs {
		}
	}()
	cv.msgs <- append(append([]byte(nil), first...), '\n') // first is the caller's, to send again
	stopWatch := context.AfterFunc(caller, cv.interrupted)
	go func() {
		<-cv.done
		stopWatch()
	}()

	expired := time.AfterFunc(bound, cancel)
	br := bufio.NewReader(outR)
	for {
		line, err := readMarker(br)
		if line == serveMarker {
			cv.Served = true
			break
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			cv.KV[k] = v
		}
		if err != nil {
			break
		}
	}
	inTime := expired.Stop()
	if cv.Served && inTime {
		cv.answers = protocol.NewAnswers(br)
		cv.mu.Lock()
		cv.served = caller.Err() == nil
		cv.mu.Unlock()
		if !cv.served {
			cancel()
		}
		return cv, nil
	}
	cv.Finish(bound) // its output ended: so does the command
	switch {
	case !inTime:
		return nil, fmt.Errorf("%s on %s: the host did not answer within %s", bootstrapStep, host, bound)
	case cv.err != nil:
		return nil, cv.failed(bootstrapStep, cv.err)
	}
	return cv, nil
}

// bootstrapStep names what failed when a bootstrap ends in error before
// the helper took over.
const bootstrapStep = "host check"

// readMarker reads one line without its newline, at most maxMarkerLine
// bytes of it.
func readMarker(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line) < maxMarkerLine {
			line = append(line, chunk[:min(len(chunk), maxMarkerLine-len(line))]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return strings.TrimRight(string(line), "\r\n"), err
		}
	}
}

// Send writes the next request; its answer is read by next.
func (cv *Conversation) Send(op string, req any) error {
	b, err := protocol.EncodeRequest(op, req)
	if err != nil {
		return err
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if cv.closed {
		return fmt.Errorf("%s on %s: the helper's input is already closed", op, cv.host)
	}
	cv.op = op
	cv.msgs <- append(b, '\n')
	return nil
}

// Call sends one more request and reads its answer into res, while ctx
// governs it as it would a command of its own (Call): when ctx ends, a
// Cancellable request is asked to stop and anything else ends the
// conversation. Requests go one at a time; the caller keeps them so.
func (cv *Conversation) Call(ctx context.Context, op string, req, res any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := cv.Send(op, req); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, cv.interrupted)
	defer stop()
	return cv.Next(0, res, nil)
}

// CloseInput ends the helper's stdin: it serves what it has and exits.
func (cv *Conversation) CloseInput() {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if !cv.closed {
		cv.closed = true
		close(cv.msgs)
	}
}

// Follow makes the conversation end with ctx as it does with Converse's
// own (a Cancellable request is asked to stop, anything else ends with
// the command), for a request sent under a context of its own; stop
// undoes it.
func (cv *Conversation) Follow(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, cv.interrupted)
}

// Ended reports whether the command has ended: nothing more is served.
func (cv *Conversation) Ended() bool {
	select {
	case <-cv.done:
		return true
	default:
		return false
	}
}

// interruptGrace bounds how long an interrupted conversation waits for
// the helper to stop the request it serves and answer.
var interruptGrace = 10 * time.Second

// interrupted follows the end of the caller's context: a Cancellable
// request is asked to stop (the command ends after interruptGrace at the
// latest); anything else ends with the command, at once.
func (cv *Conversation) interrupted() {
	cv.mu.Lock()
	ask := cv.served && !cv.closed && protocol.Cancellable(cv.op)
	if ask {
		stop, _ := protocol.EncodeRequest(protocol.OpCancel, nil)
		cv.msgs <- append(stop, '\n')
	}
	cv.mu.Unlock()
	if !ask {
		cv.cancel()
		return
	}
	time.AfterFunc(interruptGrace, cv.cancel)
}

// Next reads the answer to the last request into res, passing its
// progress lines on; bound (0: none) limits the wait, after which the
// command is killed. A failure the helper reports is a *Error.
func (cv *Conversation) Next(bound time.Duration, res any, progress func(protocol.Progress)) error {
	answered := make(chan error, 1)
	go func() { answered <- cv.answers.Next(res, progress) }()
	var expired <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		expired = t.C
	}
	var aerr error
	select {
	case aerr = <-answered:
	case <-expired:
		cv.cancel()
		<-answered
		return fmt.Errorf("%s on %s: no answer within %s", cv.op, cv.host, bound)
	}
	var he *protocol.Error
	switch {
	case aerr == nil:
		return nil
	case errors.As(aerr, &he):
		return &Error{Host: cv.host, Op: cv.op, Code: he.Code, Message: he.Message}
	}
	// No answer: how the command ended says why.
	<-cv.done
	if cv.err != nil {
		return cv.failed(cv.op, cv.err)
	}
	return fmt.Errorf("%s on %s: %w", cv.op, cv.host, aerr)
}

// failed explains a command that ended with err during what: a path the
// bootstrap refused, the last words of the script or the helper, or the
// transport.
func (cv *Conversation) failed(what string, err error) error {
	if re := refused(cv.host, err, cv.KV); re != nil {
		return re
	}
	tail := strings.TrimPrefix(lastLines(strings.TrimSpace(cv.stderr.String()), 5), "error: ")
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.Signal == "" && tail != "" {
		return &helperExit{What: what, Host: cv.host, Msg: tail, Err: err}
	}
	if tail != "" {
		return fmt.Errorf("%s on %s: %w: %s", what, cv.host, err, tail)
	}
	return fmt.Errorf("%s on %s: %w", what, cv.host, err)
}

// Finish ends the conversation: the helper's stdin is closed, and a
// command still running after grace is killed. It returns how the
// command ended.
func (cv *Conversation) Finish(grace time.Duration) error {
	cv.CloseInput()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-cv.done:
	case <-t.C:
		cv.cancel()
		<-cv.done
	}
	cv.cancel()
	return cv.err
}

// lockedBuffer keeps the first 64 KiB written to it, for readers on
// other goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return (&limitedBuffer{b: &l.b, n: 64 << 10}).Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
