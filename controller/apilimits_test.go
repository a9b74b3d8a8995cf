package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// relay answers health checks by asking the real controller with the
// same nonce and editing its answer, as something between the client and
// the controller could.
func relay(t *testing.T, port int, edit func(*Health)) int {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/health?%s", port, r.URL.RawQuery))
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var h Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		edit(&h)
		json.NewEncoder(w).Encode(h)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// Regression: recovery records the pid and start time from a
// health answer, so the proof binds them: an answer whose pid, start time
// or session id was changed on the way does not verify.
func TestHealthRejectsForgedIdentity(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	ctx := ctxFor(t, 10*time.Second)
	asIs := relay(t, s.resp.Port, func(*Health) {})
	if h, err := NewClient(nil, asIs, s.req.Token).Health(ctx); err != nil || h.PID != s.resp.PID {
		t.Fatalf("relayed unchanged: %+v, %v", h, err)
	}
	for name, edit := range map[string]func(*Health){
		"pid":        func(h *Health) { h.PID = 1 },
		"start time": func(h *Health) { h.StartTime++ },
		"session id": func(h *Health) { h.SessionID = "sess-2" },
	} {
		port := relay(t, s.resp.Port, edit)
		if h, err := NewClient(nil, port, s.req.Token).Health(ctx); !errors.Is(err, ErrNotOurs) {
			t.Errorf("forged %s: %+v, %v; want ErrNotOurs", name, h, err)
		}
	}
}

// Regression: connections over the cap, such as another local
// user's idle ones, get the owner refused at once with a clear error,
// never kept waiting; once one of them goes, the owner is served.
func TestAPIConnectionCapRefusesRatherThanStarves(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	addr := fmt.Sprintf("127.0.0.1:%d", s.resp.Port)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		// Half a request, never finished.
		if _, err := io.WriteString(c, "GET /v1/health?nonce=x HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxFor(t, time.Minute)
	for name, call := range map[string]func(*Client) error{
		"status": func(c *Client) error { _, err := c.Status(ctx); return err },
		"health": func(c *Client) error { _, err := c.Health(ctx); return err },
	} {
		err := call(NewClient(nil, s.resp.Port, s.req.Token))
		if !errors.Is(err, ErrBusy) || errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "too many connections") {
			t.Fatalf("%s with the cap taken: %v; want ErrBusy saying why", name, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s waited until its deadline", name)
		}
	}
	held[0].Close()
	waitFor(t, 10*time.Second, "a slot for the owner", func() bool {
		_, err := NewClient(nil, s.resp.Port, s.req.Token).Status(ctx)
		return err == nil
	})
}

// Regression: oversized headers and bodies are refused before
// anything acts on them.
func TestAPIRefusesOversizedRequests(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	ctx := ctxFor(t, 10*time.Second)
	base := fmt.Sprintf("http://127.0.0.1:%d", s.resp.Port)

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/health?nonce=x", nil)
	req.Header.Set("X-Pad", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: HTTP %d, want 431", resp.StatusCode)
	}

	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/stop", strings.NewReader(strings.Repeat("a", 64<<10)))
	req.Header.Set("Authorization", "Bearer "+s.req.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("64 KiB body: HTTP %d, want 413", resp.StatusCode)
	}
	if st, err := s.c.Status(ctx); err != nil || st.State != StateRunning {
		t.Fatalf("after the refused stop: %+v, %v; want the agent still running", st, err)
	}
}
