package controller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/loophttp"
)

var (
	// ErrUnauthorized: the controller refused our token.
	ErrUnauthorized = errors.New("controller refused the token")
	// ErrNotOurs: something answered on the port but did not prove it is
	// our controller. It must not be signalled or adopted.
	ErrNotOurs = errors.New("not our controller")
	// ErrBusy: the controller refused the connection, having as many open
	// as it serves (another local user may be holding them). Like an
	// unreachable controller, it proves nothing either way.
	ErrBusy = errors.New("controller busy")
)

// Client talks to one controller's API.
type Client struct {
	pool  *loophttp.Pool
	port  int
	token string
	now   func() time.Time // the send time a signed nonce carries; tests skew it
}

// NewClient returns a client for the controller on 127.0.0.1:port of the
// host that dial reaches (a direct-tcpip dialer over SSH; nil dials locally).
func NewClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), port int, token string) *Client {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &Client{pool: &loophttp.Pool{Dial: dial, Addr: "127.0.0.1:" + strconv.Itoa(port)}, port: port, token: token, now: time.Now}
}

// statusError is a non-200 answer.
type statusError struct {
	code       int
	msg        string
	generation string // the log's, when a log request was refused
}

func (e *statusError) Error() string {
	return fmt.Sprintf("controller: %s (HTTP %d)", e.msg, e.code)
}

// Health sends a fresh nonce and verifies the proof, which covers every
// field of the answer. Anything that answers without a valid proof yields
// an error wrapping ErrNotOurs; a transport failure or ErrBusy is
// returned as is (unreachable is not "not ours").
func (c *Client) Health(ctx context.Context) (Health, error) {
	return c.Prove(ctx, NewNonce())
}

// NewNonce is a fresh nonce for a health proof.
func NewNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// VerifyHealth reports whether h is the answer of a controller holding
// token to nonce.
func VerifyHealth(token, nonce string, h Health) bool {
	return hmac.Equal([]byte(healthProof(token, nonce, h)), []byte(h.Proof))
}

// Prove is Health for the caller's nonce: one chosen where the token was
// made, so that the answer proves itself there wherever it was fetched.
func (c *Client) Prove(ctx context.Context, nonce string) (Health, error) {
	var h Health
	resp, err := c.send(ctx, "GET", "/v1/health?nonce="+url.QueryEscape(nonce), false)
	var se *statusError
	if errors.As(err, &se) && !errors.Is(err, ErrBusy) {
		return h, fmt.Errorf("%w: %v", ErrNotOurs, err)
	}
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, fmt.Errorf("%w: bad health answer: %v", ErrNotOurs, err)
	}
	if !VerifyHealth(c.token, nonce, h) {
		return h, fmt.Errorf("%w: health proof does not verify", ErrNotOurs)
	}
	return h, nil
}

// Status returns the controller's current status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.call(ctx, "GET", "/v1/status", &st)
}

// Logs is LogsFrom for an offset in whichever generation the log is.
func (c *Client) Logs(ctx context.Context, offset int64, follow bool, w io.Writer) (int64, error) {
	pos, err := c.LogsFrom(ctx, LogPos{Offset: offset}, follow, w, nil)
	return pos.Offset, err
}

// Skip is output a follower never got: it fell behind by more than one
// rotation, and the generations between From and To are gone.
type Skip struct {
	From, To    string // the generation it had, the one it goes on in
	Generations int    // the generations between
	Bytes       int64  // their output that To does not start with; -1: a controller that does not count
}

// LogPos is a position in the log: a byte offset in one generation.
type LogPos struct {
	Generation string
	Offset     int64
}

// LogsFrom copies the log from pos to w and returns the position after
// the last byte written. A pos with a generation reads only that one: a
// log rotated or replaced since is a *GenerationError. With follow it
// streams, across rotations, until the agent has exited and everything
// is sent, or ctx ends (then ctx's error comes back with the position
// reached, so the caller can resume from it); skipped (when not nil) is
// told of each time it fell so far behind that output was lost.
func (c *Client) LogsFrom(ctx context.Context, pos LogPos, follow bool, w io.Writer, skipped func(Skip)) (LogPos, error) {
	pos, _, err := c.LogsThenStatus(ctx, pos, follow, w, skipped)
	return pos, err
}

// LogsThenStatus is LogsFrom, also returning the status as the log's
// answer ended, or nil when the controller sent none (one from before
// the status trailer, or a status too large for it): then ask Status.
func (c *Client) LogsThenStatus(ctx context.Context, pos LogPos, follow bool, w io.Writer, skipped func(Skip)) (LogPos, *Status, error) {
	return c.logsFrom(ctx, nil, pos, follow, w, skipped)
}

// LogSpan is where a log answer starts and how long the log was as it
// began (X-Log-Start, X-Log-Size).
type LogSpan struct{ Start, Size int64 }

// LogsSpanSigned is LogsThenStatusSigned for a reader that needs the
// log's length before any of it: open, told the span once the head is
// proved, returns the writer. pos.Offset -N asks for the last N bytes
// (all of a shorter log). A controller from before spans refuses -N or
// answers without one: that wraps ErrUnproved too, nothing written, and
// the caller asks as before (the log's length by Status).
func (c *Client) LogsSpanSigned(ctx context.Context, pos LogPos, follow bool, open func(LogSpan) io.Writer, skipped func(Skip)) (LogPos, *Status, error) {
	resp, err := c.signedLogs(ctx, pos, follow)
	if err != nil {
		return pos, nil, err
	}
	sp, ok := logSpan(resp.Header, pos.Offset)
	if !ok {
		resp.Body.Close()
		return pos, nil, fmt.Errorf("%w: GET /v1/logs answered without a span it was asked for (%s %q, %s %q)", ErrUnproved,
			headerStart, resp.Header[strings.ToLower(headerStart)], headerSize, resp.Header[strings.ToLower(headerSize)])
	}
	pos.Offset = sp.Start
	return c.logsFrom(ctx, resp, pos, follow, open(sp), skipped)
}

// logSpan reads an answer's span, false unless it is the one asked for
// by offset.
func logSpan(h map[string]string, offset int64) (LogSpan, bool) {
	start, err1 := strconv.ParseInt(h[strings.ToLower(headerStart)], 10, 64)
	size, err2 := strconv.ParseInt(h[strings.ToLower(headerSize)], 10, 64)
	want := offset
	if offset < 0 {
		want = max(size+offset, 0)
	}
	return LogSpan{Start: start, Size: size}, err1 == nil && err2 == nil && start == want && start <= size
}

func logsPath(pos LogPos, follow bool) string {
	path := "/v1/logs?offset=" + strconv.FormatInt(pos.Offset, 10)
	if pos.Generation != "" {
		path += "&generation=" + url.QueryEscape(pos.Generation)
	}
	if follow {
		path += "&follow=1"
	}
	return path
}

// logsAnswer asks for the log from pos with the token.
func (c *Client) logsAnswer(ctx context.Context, pos LogPos, follow bool) (*loophttp.Answer, error) {
	resp, err := c.send(ctx, "GET", logsPath(pos, follow), true)
	var se *statusError
	switch {
	case errors.As(err, &se) && se.code == loophttp.StatusConflict:
		return nil, &GenerationError{Want: pos.Generation, Have: se.generation}
	case errors.As(err, &se) && se.code == loophttp.StatusRangeNotSatisfiable:
		return nil, &OffsetError{Offset: pos.Offset, Generation: se.generation}
	}
	return resp, err
}

// logsFrom copies the log answer resp (to a request from pos; nil: asked
// for here) to w, and follows the log across rotations by more requests,
// with the token.
func (c *Client) logsFrom(ctx context.Context, resp *loophttp.Answer, pos LogPos, follow bool, w io.Writer, skipped func(Skip)) (LogPos, *Status, error) {
	for {
		if resp == nil {
			var err error
			if resp, err = c.logsAnswer(ctx, pos, follow); err != nil {
				return pos, nil, err
			}
		}
		if g := resp.Header[strings.ToLower(headerGeneration)]; g != "" {
			pos.Generation = g
		}
		n, err := io.Copy(w, resp.Body)
		resp.Body.Close()
		pos.Offset += n
		if err != nil && ctx.Err() != nil {
			return pos, nil, ctx.Err()
		}
		next := resp.Trailer[strings.ToLower(trailerNextGeneration)]
		if err != nil || next == "" || !follow {
			if st, ok := parseStatusTrailer(resp.Trailer[strings.ToLower(trailerStatus)]); ok && err == nil {
				return pos, &st, nil
			}
			return pos, nil, err
		}
		at, _ := strconv.ParseInt(resp.Trailer[strings.ToLower(trailerNextOffset)], 10, 64)
		if gap := generationNumber(next) - generationNumber(pos.Generation) - 1; gap > 0 && skipped != nil {
			n, err := strconv.ParseInt(resp.Trailer[strings.ToLower(trailerSkippedBytes)], 10, 64)
			if err != nil {
				n = -1
			}
			skipped(Skip{From: pos.Generation, To: next, Generations: gap, Bytes: n})
		}
		pos = LogPos{Generation: next, Offset: at}
		resp = nil
	}
}

// GenerationError: the log asked for by generation was rotated or
// replaced since; reading on would print another log's bytes.
type GenerationError struct{ Want, Have string }

func (e *GenerationError) Error() string {
	return fmt.Sprintf("the log is generation %s now, not %s: it was rotated or replaced since", e.Have, e.Want)
}

// OffsetError: the offset asked for is past the end of the log.
type OffsetError struct {
	Offset     int64
	Generation string
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("offset %d is beyond the end of the log (generation %s): it was truncated, or the offset is not one it reached", e.Offset, e.Generation)
}

// Stop stops the agent gracefully (SIGTERM to its process group, SIGKILL
// after the stop grace) and returns the resulting status. Idempotent.
func (c *Client) Stop(ctx context.Context) (Status, error) {
	var st Status
	return st, c.call(ctx, "POST", "/v1/stop", &st)
}

// Drain seals the controller, stops the agent and returns the receipt for
// claimID; the same claim id always gets the same receipt. grace is how
// long the agent has after SIGTERM before its group is killed (0: the
// session's stop grace).
func (c *Client) Drain(ctx context.Context, claimID string, grace time.Duration) (Receipt, error) {
	path := "/v1/drain?claim_id=" + url.QueryEscape(claimID)
	if grace > 0 {
		path += "&grace=" + url.QueryEscape(grace.String())
	}
	var r Receipt
	return r, c.call(ctx, "POST", path, &r)
}

func (c *Client) call(ctx context.Context, method, path string, out any) error {
	resp, err := c.send(ctx, method, path, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// send performs a request (with the token when auth) and turns a
// non-200 answer into an error.
func (c *Client) send(ctx context.Context, method, path string, auth bool) (*loophttp.Answer, error) {
	var h map[string]string
	if auth {
		h = map[string]string{"Authorization": "Bearer " + c.token}
	}
	resp, err := c.pool.Do(ctx, method, path, h)
	if err != nil {
		return nil, err
	}
	if resp.Status == loophttp.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var e logRefusal
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
	if e.Error == "" {
		e.Error = loophttp.StatusText(resp.Status)
	}
	switch resp.Status {
	case loophttp.StatusUnauthorized:
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, &statusError{resp.Status, e.Error, ""})
	case loophttp.StatusServiceUnavailable:
		return nil, fmt.Errorf("%w: %w", ErrBusy, &statusError{resp.Status, e.Error, ""})
	}
	return nil, &statusError{resp.Status, e.Error, e.Generation}
}

// CloseIdle closes the connections kept for the next call: each may hold
// a session channel of its own on the host (a relay through the helper).
func (c *Client) CloseIdle() { c.pool.CloseIdle() }
