package controller

import (
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/internal/loophttp"
)

// A signed request proves the token without sending it, and its answer
// proves the controller holds the token too: one exchange does what a
// health proof and a bearer request did in two. Whatever listens on a
// recorded port instead of the controller learns a MAC over a nonce it
// has never seen before, for that port and that request target (path
// and query) only, which no controller takes twice (nor one on another
// port: a stale port record), and the client believes no answer it
// cannot verify.
const (
	headerNonce = "X-Nonce" // newSignedNonce: the send time, then random
	// hex HMAC-SHA256(token, "request:"+method+":"+target+":"+port+":"+nonce),
	// target the path, then "?" and the query as sent when there is one:
	// a signature for one log offset or generation is none for another.
	// Without a query it is the signature of controllers from before
	// the query was signed, which take it.
	headerSignature = "X-Signature"
	headerProof     = "X-Proof" // hex HMAC-SHA256(token, "answer:"+nonce+":"+hex sha256(body))
	// maxSigned bounds the nonces a controller remembers (nonceLedger).
	maxSigned = 1024
	// signedWindow is how far a signed nonce's send time may be from the
	// controller's clock: the CLI signs on the user's machine, the
	// controller checks on the host, and two clocks kept by NTP agree to
	// well within it (Kerberos allows the same). A machine whose clock is
	// further off has each signed request refused, and falls back to
	// health and the token: one round trip more, nothing refused.
	signedWindow = 5 * time.Minute
	// maxSignedAnswer bounds what a client reads of a signed answer.
	maxSignedAnswer = 1 << 20
)

// signedRoutes are the routes a signed request may take: status and stop
// answer with one small JSON body the proof covers; the log's proof is in
// its head, covering the generation it streams and the query it answers,
// so that nothing of it is shown before the controller is proved.
var signedRoutes = map[string]bool{"/v1/status": true, "/v1/stop": true, "/v1/logs": true}

// ErrSignedRefused: the controller took no signed request (one from
// before them, or the nonce's send time is outside its window: the
// clocks disagree). Nothing was done; the caller proves the controller
// by health and uses the token.
var ErrSignedRefused = errors.New("controller refused the signed request")

// signedNonceWord is a signed request's nonce: 16 hex digits of its send
// time in unix nanoseconds, then 32 random ones. Hex only, so that no
// nonce holds the ':' that separates what a signature covers.
var signedNonceWord = ascii.Word{First: ascii.LowerHex, Rest: ascii.LowerHex, Lens: []int{16 + 32}}

// newSignedNonce is a fresh nonce for a request sent at at.
func newSignedNonce(at time.Time) string {
	return fmt.Sprintf("%016x", uint64(at.UnixNano())) + NewNonce()
}

// nonceSent is the send time nonce carries; false for no signed nonce.
func nonceSent(nonce string) (int64, bool) {
	if !signedNonceWord.MatchString(nonce) {
		return 0, false
	}
	at, err := strconv.ParseUint(nonce[:16], 16, 64)
	return int64(at), err == nil
}

// requestTarget is what a signature names of the request it is sent
// with: its path, and its query as sent.
func requestTarget(r *loophttp.Request) string {
	if r.RawQuery == "" {
		return r.Path
	}
	return r.Path + "?" + r.RawQuery
}

func requestSignature(token, method, target string, port int, nonce string) string {
	return mac(token, fmt.Sprintf("request:%s:%s:%d:%s", method, target, port, nonce))
}

// logHeadProof names the target too: the nonce already binds the answer
// to the one request signed with it, and the client checks again that
// the bytes it shows are those of the offset and generation it asked.
func logHeadProof(token, nonce, generation, target string) string {
	return mac(token, "logs:"+nonce+":"+generation+":"+target)
}

func answerProof(token, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	return mac(token, "answer:"+nonce+":"+hex.EncodeToString(sum[:]))
}

// nonceLedger holds the nonces of the signed requests taken, so that a
// replayed one is refused, in bounded memory for the life of a session.
//
// Each nonce carries its send time. The ledger forgets the nonce sent
// first once it holds maxSigned, or once its send time is more than
// signedWindow behind the controller's clock, and raises floor to that
// time; it refuses every nonce sent at or before floor. So a nonce taken
// is either held or refused by floor: a replay is refused whatever
// either clock does, the controller's stepping back included. The window
// only decides which fresh nonces are taken, and a fresh one is refused
// for their number only when maxSigned others sent after it were taken
// since: never for a client whose clock agrees with the others'.
type nonceLedger struct {
	mu    sync.Mutex
	seen  map[string]struct{}
	order sentHeap // the nonces of seen, the first sent on top
	floor int64    // the latest send time forgotten, in unix nanoseconds
}

// take records nonce, a signed one, as taken at now; false when it was
// taken before, was sent at or before a nonce forgotten, or was sent
// outside the window around now.
func (l *nonceLedger) take(nonce string, now time.Time) bool {
	at, ok := nonceSent(nonce)
	oldest, newest := now.Add(-signedWindow).UnixNano(), now.Add(signedWindow).UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.seen[nonce]; !ok || seen || at <= l.floor || at < oldest || at > newest {
		return false
	}
	if l.seen == nil {
		l.seen = map[string]struct{}{}
	}
	l.seen[nonce] = struct{}{}
	heap.Push(&l.order, sent{at: at, nonce: nonce})
	// Never empties the heap: the nonce just pushed is within the window.
	for len(l.order) > maxSigned || l.order[0].at < oldest {
		first := heap.Pop(&l.order).(sent)
		delete(l.seen, first.nonce)
		l.floor = max(l.floor, first.at)
	}
	return true
}

// sent is a nonce taken and its send time.
type sent struct {
	at    int64
	nonce string
}

// sentHeap is a container/heap of nonces, the first sent on top.
type sentHeap []sent

func (h sentHeap) Len() int           { return len(h) }
func (h sentHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h sentHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sentHeap) Push(x any)        { *h = append(*h, x.(sent)) }
func (h *sentHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// signedNonce is the nonce of a valid, fresh signed request to r's
// route, or "" (then the request must carry the token).
func (s *server) signedNonce(r *loophttp.Request) string {
	nonce, sig := r.Header["x-nonce"], r.Header["x-signature"]
	if !signedRoutes[r.Path] || nonce == "" || len(nonce) > maxNonce || sig == "" {
		return ""
	}
	want := requestSignature(s.req.Token, r.Method, requestTarget(r), s.ln.Addr().(*net.TCPAddr).Port, nonce)
	if !hmac.Equal([]byte(want), []byte(sig)) || !s.signed.take(nonce, time.Now()) {
		return ""
	}
	return nonce
}

// answer is w.JSON, proved for a signed request's nonce.
func (s *server) answer(w *loophttp.Response, nonce string, v any) {
	if nonce == "" {
		w.JSON(loophttp.StatusOK, v)
		return
	}
	b, _ := json.Marshal(v)
	w.SetHeader(headerProof, answerProof(s.req.Token, nonce, b))
	w.Raw(loophttp.StatusOK, "application/json", b)
}

// ErrUnproved marks a signed request that got no proved answer (refused,
// or answered by something that proves nothing), nothing of which was
// written anywhere: the caller may prove the controller and ask again.
var ErrUnproved = errors.New("no proved answer")

// LogsThenStatusSigned is LogsThenStatus by a signed first request: the
// answer's head proves the controller before any of the log is written
// to w. A refusal of any kind, a head that proves nothing, or a link that
// fails before it, wraps ErrUnproved, and the caller proves the
// controller (then gets the refusal, if any, from it).
func (c *Client) LogsThenStatusSigned(ctx context.Context, pos LogPos, follow bool, w io.Writer, skipped func(Skip)) (LogPos, *Status, error) {
	resp, err := c.signedLogs(ctx, pos, follow)
	if err != nil {
		return pos, nil, err
	}
	return c.logsFrom(ctx, resp, pos, follow, w, skipped)
}

// signedLogs sends the signed log request and returns its answer once
// its head proves the controller; any failure wraps ErrUnproved.
func (c *Client) signedLogs(ctx context.Context, pos LogPos, follow bool) (*loophttp.Answer, error) {
	nonce := newSignedNonce(c.now())
	path := logsPath(pos, follow)
	h := map[string]string{headerNonce: nonce, headerSignature: requestSignature(c.token, "GET", path, c.port, nonce)}
	resp, err := c.pool.Do(ctx, "GET", path, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnproved, err)
	}
	gen := resp.Header[strings.ToLower(headerGeneration)]
	if resp.Status != loophttp.StatusOK || !hmac.Equal([]byte(logHeadProof(c.token, nonce, gen, path)), []byte(resp.Header["x-proof"])) {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: GET /v1/logs answered %d without a valid proof", ErrUnproved, resp.Status)
	}
	return resp, nil
}

// StatusSigned is Status by a signed request: the answer proves the
// controller holds the token, which it never receives.
func (c *Client) StatusSigned(ctx context.Context) (Status, error) {
	var st Status
	return st, c.signed(ctx, "GET", "/v1/status", &st)
}

// StopSigned is Stop by a signed request.
func (c *Client) StopSigned(ctx context.Context) (Status, error) {
	var st Status
	return st, c.signed(ctx, "POST", "/v1/stop", &st)
}

// signed sends a signed request and decodes its answer once the proof
// verifies. A refusal is ErrSignedRefused (or ErrBusy), an answer
// without a valid proof ErrNotOurs; a transport failure is returned as is.
func (c *Client) signed(ctx context.Context, method, path string, out any) error {
	nonce := newSignedNonce(c.now())
	h := map[string]string{headerNonce: nonce, headerSignature: requestSignature(c.token, method, path, c.port, nonce)}
	resp, err := c.pool.Do(ctx, method, path, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.Status {
	case loophttp.StatusOK:
	case loophttp.StatusServiceUnavailable:
		return fmt.Errorf("%w: %s %s", ErrBusy, method, path)
	case loophttp.StatusUnauthorized:
		return fmt.Errorf("%w: %s %s", ErrSignedRefused, method, path)
	default:
		return fmt.Errorf("%w: %s %s answered %d", ErrNotOurs, method, path, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSignedAnswer))
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(answerProof(c.token, nonce, b)), []byte(resp.Header["x-proof"])) {
		return fmt.Errorf("%w: %s %s: answer proof does not verify", ErrNotOurs, method, path)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: bad answer to %s %s: %v", ErrNotOurs, method, path, err)
	}
	return nil
}
