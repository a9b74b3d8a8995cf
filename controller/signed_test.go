package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// signedHeader is the headers of a request to target on port signed
// with token, its nonce sent at at.
func signedHeader(token, method, target string, port int, at time.Time) http.Header {
	nonce := newSignedNonce(at)
	h := http.Header{}
	h.Set(headerNonce, nonce)
	h.Set(headerSignature, requestSignature(token, method, target, port, nonce))
	return h
}

// rawSigned sends a signed request with the given headers straight to
// port, as whatever captured them could, and returns the answer's code.
func rawSigned(t *testing.T, method, path string, port int, h http.Header) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxFor(t, 10*time.Second), method, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	req.Header = h.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// impostor listens where a controller was recorded, answering every
// request with a plausible status and a made-up proof, and keeps what it
// was sent.
func impostor(t *testing.T) (port int, seen func() []http.Header) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("X-Proof", strings.Repeat("0", 64))
		io.WriteString(w, `{"session_id":"sess-1","state":"stopped"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// Whatever listens on the recorded port instead of the controller is
// believed in nothing, never sees the token, and what it captured stops
// nothing: not the controller on its own port (a stale port record
// pointing at the impostor), for the signature names the port it was
// sent to.
func TestSignedStopImpostorLearnsNothingReusable(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	port, seen := impostor(t)
	fake := NewClient(nil, port, s.req.Token)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := fake.StopSigned(ctx); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("StopSigned answered by an impostor: %v, want ErrNotOurs", err)
	}
	if _, err := fake.StatusSigned(ctx); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("StatusSigned answered by an impostor: %v, want ErrNotOurs", err)
	}
	got := seen()
	if len(got) != 2 {
		t.Fatalf("impostor saw %d requests, want 2", len(got))
	}
	for _, h := range got {
		for k, v := range h {
			if strings.Contains(strings.Join(v, ","), s.req.Token) || k == "Authorization" {
				t.Fatalf("impostor saw %s: %q", k, v)
			}
		}
	}
	if code := rawSigned(t, "POST", "/v1/stop", s.resp.Port, got[0]); code != http.StatusUnauthorized {
		t.Fatalf("captured stop replayed to the controller: HTTP %d, want 401", code)
	}
	if code := rawSigned(t, "GET", "/v1/status", s.resp.Port, got[1]); code != http.StatusUnauthorized {
		t.Fatalf("captured status replayed to the controller: HTTP %d, want 401", code)
	}
	stillRunning(t, s, "after the replays")
}

// A signed request is taken once: replayed to its controller, or to
// another session's (another token), it does nothing.
func TestSignedStopReplayDoesNothing(t *testing.T) {
	t.Parallel()
	s, other := startRunning(t), startRunning(t)
	h := signedHeader(s.req.Token, "GET", "/v1/status", s.resp.Port, time.Now())
	nonce := h.Get(headerNonce)
	if code := rawSigned(t, "GET", "/v1/status", s.resp.Port, h); code != http.StatusOK {
		t.Fatalf("signed status: HTTP %d, want 200", code)
	}
	if code := rawSigned(t, "GET", "/v1/status", s.resp.Port, h); code != http.StatusUnauthorized {
		t.Fatalf("replayed signed status: HTTP %d, want 401", code)
	}
	h.Set(headerSignature, requestSignature(s.req.Token, "POST", "/v1/stop", s.resp.Port, nonce))
	if code := rawSigned(t, "POST", "/v1/stop", s.resp.Port, h); code != http.StatusUnauthorized {
		t.Fatalf("a stop signed with a taken nonce: HTTP %d, want 401", code)
	}
	stop := signedHeader(s.req.Token, "POST", "/v1/stop", s.resp.Port, time.Now())
	if code := rawSigned(t, "POST", "/v1/stop", other.resp.Port, stop); code != http.StatusUnauthorized {
		t.Fatalf("stop signed for another session: HTTP %d, want 401", code)
	}
	if code := rawSigned(t, "POST", "/v1/stop", s.resp.Port, stop); code != http.StatusOK {
		t.Fatalf("signed stop: HTTP %d, want 200", code)
	}
	ctx := ctxFor(t, 10*time.Second)
	stillRunning(t, other, "the other session, after a stop signed for another")
	if st, err := s.c.Status(ctx); err != nil || st.State != StateStopped {
		t.Fatalf("after its signed stop: %+v, %v", st, err)
	}
}

// countingConn counts the requests written on it.
type countingConn struct {
	net.Conn
	mu       *sync.Mutex
	requests *int
}

func (c countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	*c.requests += strings.Count(string(p), " HTTP/1.1\r\n")
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// startRunning starts a controller whose agent sleeps, once it runs.
func startRunning(t *testing.T) *session {
	s := start(t, newRequest(t, "sleep 30"))
	waitState(t, s, StateRunning)
	return s
}

// stillRunning fails unless s's agent runs, asked with the token.
func stillRunning(t *testing.T, s *session, when string) {
	t.Helper()
	if st, err := s.c.Status(ctxFor(t, 10*time.Second)); err != nil || st.State != StateRunning {
		t.Fatalf("%s: %+v, %v; want it running", when, st, err)
	}
}

// countingClient is a client of s counting the requests it sends: count
// returns how many since it was last called.
func countingClient(s *session) (*Client, func() int) {
	var mu sync.Mutex
	requests := 0
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{Conn: c, mu: &mu, requests: &requests}, err
	}
	return NewClient(dial, s.resp.Port, s.req.Token), func() int {
		mu.Lock()
		defer mu.Unlock()
		n := requests
		requests = 0
		return n
	}
}

// A signed status and a signed stop are one request each, proved by
// their answer, where health then the token took two.
func TestSignedOpsOneRequestEach(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	c, count := countingClient(s)
	ctx := ctxFor(t, 10*time.Second)
	st, err := c.StatusSigned(ctx)
	if err != nil || st.State != StateRunning || st.SessionID != s.req.SessionID {
		t.Fatalf("StatusSigned: %+v, %v", st, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("StatusSigned sent %d requests, want 1", n)
	}
	if st, err = c.StopSigned(ctx); err != nil || st.State != StateStopped {
		t.Fatalf("StopSigned: %+v, %v", st, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("StopSigned sent %d requests, want 1", n)
	}
}

// A wrong token signs nothing the controller takes, and is told so as a
// refusal (the caller falls back to health), never as an answer.
func TestSignedWrongTokenRefused(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	wrong := NewClient(nil, s.resp.Port, s.req.Token+"x")
	if _, err := wrong.StopSigned(ctxFor(t, 10*time.Second)); !errors.Is(err, ErrSignedRefused) {
		t.Fatalf("StopSigned with a wrong token: %v, want ErrSignedRefused", err)
	}
	stillRunning(t, s, "after a wrongly signed stop")
}

// A log whose answer's head does not prove the controller shows nothing
// of it: an impostor's "log" is never written out, and the caller may
// prove the controller and ask again.
func TestSignedLogsShowNothingUnproved(t *testing.T) {
	t.Parallel()
	port, seen := impostor(t)
	var out strings.Builder
	_, _, err := NewClient(nil, port, "s3cr3t").LogsThenStatusSigned(ctxFor(t, 10*time.Second), LogPos{}, false, &out, nil)
	if !errors.Is(err, ErrUnproved) || out.Len() != 0 {
		t.Fatalf("logs from an impostor: %v, wrote %q; want ErrUnproved and nothing", err, out.String())
	}
	if got := seen(); len(got) != 1 || got[0].Get("Authorization") != "" {
		t.Fatalf("impostor saw %v", got)
	}
}

// The controller's own log by a signed request, in one request, with the
// status the answer ends with; its nonce is not taken again.
func TestSignedLogsOneRequest(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo hello"))
	waitState(t, s, StateExited)
	c, count := countingClient(s)
	var out strings.Builder
	pos, st, err := c.LogsThenStatusSigned(ctxFor(t, 10*time.Second), LogPos{}, false, &out, nil)
	if err != nil || st == nil || st.State != StateExited || !strings.Contains(out.String(), "hello\n") || pos.Offset != int64(out.Len()) {
		t.Fatalf("signed logs: %+v %+v %v\n%s", pos, st, err, out.String())
	}
	if n := count(); n != 1 {
		t.Fatalf("signed logs sent %d requests, want 1", n)
	}
}

// A controller takes every fresh signed request, however many it has
// taken (a session watched for a day), each in one request, without
// ever taking one twice: a nonce it has forgotten since is refused.
func TestSignedManyAllTaken(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	first := signedHeader(s.req.Token, "GET", "/v1/status", s.resp.Port, time.Now())
	if code := rawSigned(t, "GET", "/v1/status", s.resp.Port, first); code != http.StatusOK {
		t.Fatalf("first signed status: HTTP %d, want 200", code)
	}
	c, count := countingClient(s)
	ctx := ctxFor(t, 120*time.Second)
	for i := range maxSigned + 1 {
		if _, err := c.StatusSigned(ctx); err != nil {
			t.Fatalf("signed status %d: %v", i, err)
		}
	}
	if n := count(); n != maxSigned+1 {
		t.Fatalf("%d signed statuses sent %d requests, want one each", maxSigned+1, n)
	}
	if code := rawSigned(t, "GET", "/v1/status", s.resp.Port, first); code != http.StatusUnauthorized {
		t.Fatalf("the first nonce replayed once forgotten: HTTP %d, want 401", code)
	}
	if st, err := c.StopSigned(ctx); err != nil || st.State != StateStopped {
		t.Fatalf("signed stop past %d signed requests: %+v, %v", maxSigned+1, st, err)
	}
}

// size is how many nonces l holds.
func (l *nonceLedger) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) != len(l.order) {
		panic(fmt.Sprintf("ledger holds %d nonces and orders %d", len(l.seen), len(l.order)))
	}
	return len(l.seen)
}

// The ledger holds at most maxSigned nonces, and what it forgets (by
// number, or by age) is refused as a replay would be; nothing sent
// outside the window around the controller's clock is taken.
func TestNonceLedgerBounded(t *testing.T) {
	t.Parallel()
	var l nonceLedger
	now := time.Now()
	first := newSignedNonce(now)
	if !l.take(first, now) || l.take(first, now) {
		t.Fatal("a fresh nonce is taken once")
	}
	for i := range 3 * maxSigned {
		at := now.Add(time.Duration(i+1) * time.Millisecond)
		if !l.take(newSignedNonce(at), at) {
			t.Fatalf("fresh nonce %d refused", i)
		}
		if n := l.size(); n > maxSigned {
			t.Fatalf("after %d nonces the ledger holds %d, want at most %d", i+2, n, maxSigned)
		}
	}
	if l.size() != maxSigned {
		t.Fatalf("ledger holds %d, want %d", l.size(), maxSigned)
	}
	if l.take(first, now) {
		t.Fatal("a forgotten nonce was taken again")
	}
	later := now.Add(3 * signedWindow)
	for name, at := range map[string]time.Time{"behind": later.Add(-signedWindow - time.Second), "ahead": later.Add(signedWindow + time.Second)} {
		if l.take(newSignedNonce(at), later) {
			t.Fatalf("a nonce sent %s the window was taken", name)
		}
	}
	last := newSignedNonce(later)
	if !l.take(last, later) || l.size() != 1 {
		t.Fatalf("past the window the ledger holds %d, want only the nonce just taken", l.size())
	}
	if l.take(first, now) || l.take(last, later) {
		t.Fatal("a nonce was taken twice")
	}
	if l.take(NewNonce(), later) {
		t.Fatal("a nonce without a send time was taken")
	}
}

// A signed request whose nonce was sent outside the controller's window
// (a CLI on a machine whose clock is off) is refused, does nothing, and
// the client's fallback (health, then the token) still answers.
func TestSignedOutsideWindowFallsBack(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo started; exec sleep 30"))
	waitState(t, s, StateRunning)
	waitFor(t, 5*time.Second, "the agent's first line", func() bool { return strings.Contains(readLog(t, s), "started\n") })
	ctx := ctxFor(t, 10*time.Second)
	for _, skew := range []time.Duration{-signedWindow - time.Minute, signedWindow + time.Minute} {
		at := time.Now().Add(skew)
		if code := rawSigned(t, "POST", "/v1/stop", s.resp.Port, signedHeader(s.req.Token, "POST", "/v1/stop", s.resp.Port, at)); code != http.StatusUnauthorized {
			t.Fatalf("a stop sent %s off: HTTP %d, want 401", skew, code)
		}
		c := NewClient(nil, s.resp.Port, s.req.Token)
		c.now = func() time.Time { return time.Now().Add(skew) }
		if _, err := c.StopSigned(ctx); !errors.Is(err, ErrSignedRefused) {
			t.Fatalf("signed stop %s off: %v, want ErrSignedRefused", skew, err)
		}
		var out strings.Builder
		if _, _, err := c.LogsThenStatusSigned(ctx, LogPos{}, false, &out, nil); !errors.Is(err, ErrUnproved) || out.Len() != 0 {
			t.Fatalf("signed logs %s off: %v, wrote %q; want ErrUnproved and nothing", skew, err, out.String())
		}
		if _, err := c.Health(ctx); err != nil {
			t.Fatalf("health after a refused signed request: %v", err)
		}
		if st, err := c.Status(ctx); err != nil || st.State != StateRunning {
			t.Fatalf("status by the token, %s off: %+v, %v", skew, st, err)
		}
		var shown strings.Builder
		if _, _, err := c.LogsThenStatus(ctx, LogPos{}, false, &shown, nil); err != nil || !strings.Contains(shown.String(), "started\n") {
			t.Fatalf("logs by the token, %s off: %v, %q", skew, err, shown.String())
		}
	}
	stillRunning(t, s, "after signed stops outside the window")
}

// rewritingConn changes old into new in the requests written on it, as
// whatever relays them could, and counts the requests it changed.
type rewritingConn struct {
	net.Conn
	old, new string
	changed  *atomic.Int32
}

func (c rewritingConn) Write(p []byte) (int, error) {
	if s := string(p); strings.Contains(s, c.old) {
		c.changed.Add(1)
		if _, err := c.Conn.Write([]byte(strings.ReplaceAll(s, c.old, c.new))); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// A log request's signature covers its query: one whose offset or
// generation was changed in transit is refused, and the client shows
// nothing as proved; so is a signature over the path alone (a CLI from
// before the query was signed, which falls back on it as on any refusal).
func TestSignedLogsQueryChangedRefused(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo hello"))
	st := waitState(t, s, StateExited)
	for _, tc := range []struct{ signed, sent string }{
		{"/v1/logs?offset=0", "/v1/logs?offset=3"},
		{"/v1/logs?offset=0&generation=" + st.LogGeneration, "/v1/logs?offset=0"},
		{"/v1/logs", "/v1/logs?offset=3"},
	} {
		if code := rawSigned(t, "GET", tc.sent, s.resp.Port, signedHeader(s.req.Token, "GET", tc.signed, s.resp.Port, time.Now())); code != http.StatusUnauthorized {
			t.Fatalf("signed for %s, sent as %s: HTTP %d, want 401", tc.signed, tc.sent, code)
		}
	}
	var changed atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return rewritingConn{Conn: c, old: "/v1/logs?offset=0 ", new: "/v1/logs?offset=3 ", changed: &changed}, err
	}
	c := NewClient(dial, s.resp.Port, s.req.Token)
	ctx := ctxFor(t, 10*time.Second)
	var out strings.Builder
	if _, _, err := c.LogsThenStatusSigned(ctx, LogPos{}, false, &out, nil); !errors.Is(err, ErrUnproved) || out.Len() != 0 || changed.Load() != 1 {
		t.Fatalf("signed logs whose offset was changed in transit (%d changed): %v, wrote %q; want ErrUnproved and nothing", changed.Load(), err, out.String())
	}
	// The same path, its query left as signed, is taken and proved.
	pos, _, err := c.LogsThenStatusSigned(ctx, LogPos{Offset: 2}, false, &out, nil)
	if err != nil || changed.Load() != 1 || !strings.Contains(out.String(), "llo\n") || !strings.HasPrefix(readLog(t, s)[2:], out.String()) || pos.Offset != 2+int64(out.Len()) {
		t.Fatalf("signed logs from offset 2: %+v, %v, %q", pos, err, out.String())
	}
}

// A signature names the method and path it was made for: a fresh status
// signature sent as a stop is refused and stops nothing.
func TestSignedStatusSignatureIsNoStop(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	h := signedHeader(s.req.Token, "GET", "/v1/status", s.resp.Port, time.Now())
	if code := rawSigned(t, "POST", "/v1/stop", s.resp.Port, h); code != http.StatusUnauthorized {
		t.Fatalf("a status signature sent as a stop: HTTP %d, want 401", code)
	}
	stillRunning(t, s, "after a status signature sent as a stop")
}

// A genuine proved answer, replayed by whatever holds the port to a new
// request, proves nothing: the proof names the nonce it answered.
func TestSignedAnswerReplayNotOurs(t *testing.T) {
	t.Parallel()
	s := startRunning(t)
	resp, body := genuineAnswer(t, s, "/v1/status")
	proof := resp.Header.Get(headerProof)
	if resp.StatusCode != http.StatusOK || proof == "" {
		t.Fatalf("genuine signed status: HTTP %d, proof %q", resp.StatusCode, proof)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(headerProof, proof)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	fake := NewClient(nil, srv.Listener.Addr().(*net.TCPAddr).Port, s.req.Token)
	if _, err := fake.StatusSigned(ctxFor(t, 10*time.Second)); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("replayed genuine answer: %v, want ErrNotOurs", err)
	}
}

// A genuine proved log head, replayed by whatever holds the port to a new
// request, proves nothing and none of its log is written out.
func TestSignedLogsHeadReplayUnproved(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo hello"))
	waitState(t, s, StateExited)
	resp, body := genuineAnswer(t, s, "/v1/logs")
	proof, gen := resp.Header.Get(headerProof), resp.Header.Get(headerGeneration)
	if resp.StatusCode != http.StatusOK || proof == "" || !strings.Contains(string(body), "hello") {
		t.Fatalf("genuine signed logs: HTTP %d, proof %q, %q", resp.StatusCode, proof, body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(headerProof, proof)
		w.Header().Set(headerGeneration, gen)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	var out strings.Builder
	fake := NewClient(nil, srv.Listener.Addr().(*net.TCPAddr).Port, s.req.Token)
	if _, _, err := fake.LogsThenStatusSigned(ctxFor(t, 10*time.Second), LogPos{}, false, &out, nil); !errors.Is(err, ErrUnproved) || out.Len() != 0 {
		t.Fatalf("replayed genuine log head: %v, wrote %q; want ErrUnproved and nothing", err, out.String())
	}
}

// genuineAnswer is s's controller's own answer to a fresh signed GET of
// path, as a listener on the path between could capture it.
func genuineAnswer(t *testing.T, s *session, path string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxFor(t, 10*time.Second), "GET", fmt.Sprintf("http://127.0.0.1:%d%s", s.resp.Port, path), nil)
	req.Header = signedHeader(s.req.Token, "GET", path, s.resp.Port, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
