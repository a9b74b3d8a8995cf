package loophttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve runs a Server with h on a loopback port until the test ends.
func serve(t *testing.T, readTimeout time.Duration, h func(*Response, *Request)) string {
	t.Helper()
	addr, _ := serveOn(t, readTimeout, h)
	return addr
}

func serveOn(t *testing.T, readTimeout time.Duration, h func(*Response, *Request)) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, ReadTimeout: readTimeout, MaxBody: 16}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Shutdown(time.Second)
		if err := <-served; !errors.Is(err, errServerClosed) {
			t.Errorf("Serve: %v, want the server closed", err)
		}
	})
	return ln.Addr().String(), s
}

// logLike answers as the controller's log does: a stream of pieces, then
// trailers.
func logLike(w *Response, r *Request) {
	if r.Path != "/stream" {
		w.JSON(StatusOK, map[string]string{"path": r.Path, "q": r.Query.Get("q"), "auth": r.Header["authorization"]})
		return
	}
	w.SetHeader("X-Log-Generation", "g1")
	w.Stream(StatusOK, "X-Next")
	for _, p := range []string{"one\n", "two\n", "three\n"} {
		if _, err := w.Write([]byte(p)); err != nil {
			return
		}
	}
	w.SetTrailer("X-Next", "g2")
}

// net/http's client, which CLIs of every release use, reads both kinds of
// answer, trailers included.
func TestNetHTTPClientReadsAnswers(t *testing.T) {
	addr := serve(t, 10*time.Second, logLike)
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/status?q=a%20b", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength <= 0 || got["path"] != "/v1/status" || got["q"] != "a b" || got["auth"] != "Bearer tok" {
		t.Fatalf("HTTP %d, length %d, %q", resp.StatusCode, resp.ContentLength, got)
	}

	resp, err = http.Get("http://" + addr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "one\ntwo\nthree\n" {
		t.Fatalf("stream: %q, %v", body, err)
	}
	if resp.Header.Get("X-Log-Generation") != "g1" || resp.Trailer.Get("X-Next") != "g2" {
		t.Fatalf("stream header %q, trailer %q", resp.Header, resp.Trailer)
	}

	resp, err = http.Post("http://"+addr+"/v1/stop", "text/plain", strings.NewReader(strings.Repeat("x", 64)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != StatusRequestEntityTooLarge {
		t.Fatalf("64-byte body over a 16-byte bound: HTTP %d, want 413", resp.StatusCode)
	}
}

// Do reads the same answers, and net/http's server's as well.
func TestDoReadsAnswers(t *testing.T) {
	addr := serve(t, 10*time.Second, logLike)
	ctx := context.Background()
	dial := (&net.Dialer{}).DialContext
	a, err := (&Pool{Dial: dial, Addr: addr}).Do(ctx, "POST", "/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(a.Body)
	a.Body.Close()
	if err != nil || string(body) != "one\ntwo\nthree\n" || a.Header["x-log-generation"] != "g1" || a.Trailer["x-next"] != "g2" {
		t.Fatalf("stream: %q, %v, header %q, trailer %q", body, err, a.Header, a.Trailer)
	}

	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Next")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, r.Header.Get("Authorization"))
		w.(http.Flusher).Flush()
		io.WriteString(w, "!")
		w.Header().Set("X-Next", "n")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	a, err = (&Pool{Dial: dial, Addr: ln.Addr().String()}).Do(ctx, "GET", "/", map[string]string{"Authorization": "Bearer x"})
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(a.Body)
	a.Body.Close()
	if err != nil || a.Status != http.StatusTeapot || string(body) != "Bearer x!" || a.Trailer["x-next"] != "n" {
		t.Fatalf("net/http's answer: %d %q, %v, trailer %q", a.Status, body, err, a.Trailer)
	}
}

// A peer that sends part of a request and then nothing is cut off at the
// read deadline, not held forever.
func TestPartialRequestCutOffAtDeadline(t *testing.T) {
	addr := serve(t, 300*time.Millisecond, logLike)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	// Nothing is answered: the server closes once the deadline passes.
	// The test's own timeout bounds this read.
	b, err := io.ReadAll(c)
	if err != nil || len(b) != 0 {
		t.Fatalf("after a partial request: %q, %v; want the connection closed without an answer", b, err)
	}
}

// A refused request is answered with its status and a JSON reason.
func TestRefusedRequestAnswered(t *testing.T) {
	addr := serve(t, 10*time.Second, logLike)
	for raw, want := range map[string]string{
		"POST /v1/stop HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n": "HTTP/1.1 501 ",
		"BAD(METHOD / HTTP/1.1\r\n\r\n":                                            "HTTP/1.1 400 ",
		"GET / HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\n": "HTTP/1.1 431 ",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || !strings.HasPrefix(string(b), want) || !strings.Contains(string(b), "\r\n\r\n{\"error\":") {
			t.Fatalf("%.40q: answered %q, %v; want %q and a JSON reason", raw, b, err, want)
		}
	}
}

// A streaming handler hears of a client that went away.
func TestGoneWhenClientCloses(t *testing.T) {
	heard := make(chan struct{})
	addr := serve(t, 10*time.Second, func(w *Response, r *Request) {
		w.Stream(StatusOK, "")
		<-w.Gone()
		close(heard)
	})
	a, err := (&Pool{Dial: (&net.Dialer{}).DialContext, Addr: addr}).Do(context.Background(), "GET", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Body.Close()
	<-heard
}

// An answer whose head or trailers never end is cut off at the bound, not
// read into memory without end.
func TestDoBoundsHeadAndTrailers(t *testing.T) {
	endless := strings.Repeat("X-Pad: "+strings.Repeat("a", 100)+"\r\n", 2*MaxHeaderBytes/100)
	for name, answer := range map[string]string{
		"head":     "HTTP/1.1 200 OK\r\n" + endless,
		"trailers": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n" + endless,
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			go io.Copy(io.Discard, c)
			io.WriteString(c, answer)
		}()
		a, err := (&Pool{Dial: (&net.Dialer{}).DialContext, Addr: ln.Addr().String()}).Do(context.Background(), "GET", "/", nil)
		if err == nil {
			_, err = io.ReadAll(a.Body)
			a.Body.Close()
		}
		ln.Close()
		if StatusOf(err) != StatusHeaderFieldsTooLarge {
			t.Errorf("%s without end: %v, want it refused as too large", name, err)
		}
	}
}

// A pool sends its next request on the connection the last answer left
// open, and on a fresh one once the server has closed that.
func TestPoolKeepsOneConnection(t *testing.T) {
	addr, srv := serveOn(t, 500*time.Millisecond, logLike)
	var dials atomic.Int32
	p := &Pool{Addr: addr, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	get := func(method string) {
		t.Helper()
		a, err := p.Do(context.Background(), method, "/v1/status?q="+method, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		err = json.NewDecoder(a.Body).Decode(&got)
		a.Body.Close()
		if err != nil || got["q"] != method {
			t.Fatalf("%s: %q, %v", method, got, err)
		}
	}
	get("GET")
	get("POST")
	if n := dials.Load(); n != 1 {
		t.Fatalf("two requests dialled %d connections, want 1", n)
	}
	// The server closes the idle connection at its read deadline.
	waitConnsClosed(srv)
	get("GET")
	if n := dials.Load(); n != 2 {
		t.Fatalf("after the server closed the kept connection: %d dials, want 2", n)
	}
}

// A request carrying Authorization whose kept connection fails without
// an answer is not sent again on a fresh one: the error comes back.
func TestPoolNeverRedialsAuthorization(t *testing.T) {
	addr, srv := serveOn(t, 500*time.Millisecond, logLike)
	var dials atomic.Int32
	p := &Pool{Addr: addr, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	a, err := p.Do(context.Background(), "GET", "/v1/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, a.Body)
	a.Body.Close()
	waitConnsClosed(srv)
	if _, err := p.Do(context.Background(), "GET", "/v1/status", map[string]string{"Authorization": "Bearer x"}); err == nil {
		t.Fatal("a bearer request on a closed kept connection succeeded")
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("a bearer request was dialled again: %d dials, want 1", n)
	}
}

// waitConnsClosed returns once srv holds no connection (it closes an idle
// one at its read deadline).
func waitConnsClosed(srv *Server) {
	for {
		srv.mu.Lock()
		n := len(srv.conns)
		srv.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
