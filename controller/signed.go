package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/internal/loophttp"
)

// A signed request proves the token without sending it, and its answer
// proves the controller holds the token too: one exchange does what a
// health proof and a bearer request did in two. Whatever listens on a
// recorded port instead of the controller learns a MAC over a nonce it
// has never seen before, for that port only, which no controller takes
// twice (nor one on another port: a stale port record), and the client
// believes no answer it cannot verify.
const (
	headerNonce     = "X-Nonce"
	headerSignature = "X-Signature" // hex HMAC-SHA256(token, "request:"+method+":"+path+":"+port+":"+nonce)
	headerProof     = "X-Proof"     // hex HMAC-SHA256(token, "answer:"+nonce+":"+hex sha256(body))
	// maxSigned bounds the nonces a controller remembers; past it signed
	// requests are refused and clients fall back to health and the token.
	maxSigned = 1024
	// maxSignedAnswer bounds what a client reads of a signed answer.
	maxSignedAnswer = 1 << 20
)

// signedRoutes are the routes a signed request may take: status and stop
// answer with one small JSON body the proof covers; the log's proof is in
// its head, covering the generation it streams, so that nothing of it is
// shown before the controller is proved.
var signedRoutes = map[string]bool{"/v1/status": true, "/v1/stop": true, "/v1/logs": true}

// ErrSignedRefused: the controller took no signed request (one from
// before them, or one that has taken as many as it remembers). Nothing
// was done; the caller proves the controller by health and uses the token.
var ErrSignedRefused = errors.New("controller refused the signed request")

func requestSignature(token, method, path string, port int, nonce string) string {
	return mac(token, fmt.Sprintf("request:%s:%s:%d:%s", method, path, port, nonce))
}

func logHeadProof(token, nonce, generation string) string {
	return mac(token, "logs:"+nonce+":"+generation)
}

func answerProof(token, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	return mac(token, "answer:"+nonce+":"+hex.EncodeToString(sum[:]))
}

// nonceLedger holds the nonces of the signed requests taken, so that a
// replayed one is refused.
type nonceLedger struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// take records nonce; false when it was taken before or the ledger is full.
func (l *nonceLedger) take(nonce string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]struct{}{}
	}
	if _, ok := l.seen[nonce]; ok || len(l.seen) >= maxSigned {
		return false
	}
	l.seen[nonce] = struct{}{}
	return true
}

// signedNonce is the nonce of a valid, fresh signed request to r's
// route, or "" (then the request must carry the token).
func (s *server) signedNonce(r *loophttp.Request) string {
	nonce, sig := r.Header["x-nonce"], r.Header["x-signature"]
	if !signedRoutes[r.Path] || nonce == "" || len(nonce) > maxNonce || sig == "" {
		return ""
	}
	want := requestSignature(s.req.Token, r.Method, r.Path, s.ln.Addr().(*net.TCPAddr).Port, nonce)
	if !hmac.Equal([]byte(want), []byte(sig)) || !s.signed.take(nonce) {
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
	nonce := NewNonce()
	path := logsPath(pos, follow)
	h := map[string]string{headerNonce: nonce, headerSignature: requestSignature(c.token, "GET", "/v1/logs", c.port, nonce)}
	resp, err := c.pool.Do(ctx, "GET", path, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnproved, err)
	}
	gen := resp.Header[strings.ToLower(headerGeneration)]
	if resp.Status != loophttp.StatusOK || !hmac.Equal([]byte(logHeadProof(c.token, nonce, gen)), []byte(resp.Header["x-proof"])) {
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
	nonce := NewNonce()
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
