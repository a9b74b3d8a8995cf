package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHealthProofAndAuth(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	ctx := ctxFor(t, 10*time.Second)
	h, err := s.c.Health(ctx)
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if h.SessionID != "sess-1" || h.PID != s.resp.PID || h.StartTime != s.resp.StartTime {
		t.Fatalf("health %+v does not match start response %+v", h, s.resp)
	}

	wrong := NewClient(nil, s.resp.Port, s.req.Token+"x")
	if _, err := wrong.Health(ctx); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Health with a wrong token: %v, want ErrNotOurs", err)
	}
	if _, err := wrong.Status(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Status with a wrong token: %v, want ErrUnauthorized", err)
	}
	for _, auth := range []string{"", "Bearer " + s.req.Token + "x", "Bearer", s.req.Token} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/v1/status", s.resp.Port), nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("Authorization %q: HTTP %d, want 401", auth, resp.StatusCode)
		}
	}
}

// A proof fetched for a nonce chosen elsewhere (the CLI's, relayed by the
// helper) verifies where the token was made, for that nonce and those
// fields only.
func TestProveForCallersNonce(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	nonce := NewNonce() + "&x=y" // escaped on the way
	h, err := s.c.Prove(ctxFor(t, 10*time.Second), nonce)
	if err != nil {
		t.Fatalf("Prove: %v", err)
	}
	if !VerifyHealth(s.req.Token, nonce, h) {
		t.Fatal("the proof does not verify for its nonce")
	}
	forged := h
	forged.PID++
	for name, bad := range map[string]bool{
		"another nonce": VerifyHealth(s.req.Token, NewNonce(), h),
		"another token": VerifyHealth(s.req.Token+"x", nonce, h),
		"another pid":   VerifyHealth(s.req.Token, nonce, forged),
	} {
		if bad {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestHealthRejectsStranger(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.HandlerFunc{
		"bad proof": func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"session_id":"sess-1","pid":1,"start_time":1,"proof":"00"}`)
		},
		"not json": func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") },
		"403":      func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) },
	} {
		srv := httptest.NewServer(h)
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		_, err := NewClient(nil, port, "token").Health(ctxFor(t, 5*time.Second))
		srv.Close()
		if !errors.Is(err, ErrNotOurs) {
			t.Errorf("%s: %v, want ErrNotOurs", name, err)
		}
	}
}

// Whatever answers on the port, Health never sends it the token: a
// stranger that took a dead controller's port learns nothing to forge
// proofs or receipts with.
func TestHealthNeverSendsToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if _, err := NewClient(nil, port, "s3cr3t").Health(ctxFor(t, 5*time.Second)); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Health of a stranger: %v, want ErrNotOurs", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "" {
		t.Fatalf("stranger saw Authorization %q", seen)
	}
}

func TestExitCodeAndLogsFromOffset(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo first; echo second >&2; exit 3"))
	st := waitState(t, s, StateExited)
	if st.ExitCode == nil || *st.ExitCode != 3 || st.EndedAt == nil || st.AgentPID == 0 {
		t.Fatalf("status %+v, want exited with code 3", st)
	}
	if fst, err := ReadStatusFile(s.req.SessionDir); err != nil || fst.State != StateExited || *fst.ExitCode != 3 {
		t.Fatalf("status.json %+v, %v", fst, err)
	}
	ctx := ctxFor(t, 10*time.Second)
	var all bytes.Buffer
	end, err := s.c.Logs(ctx, 0, false, &all)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first\n", "second\n", "[controller] ", "agent exited with code 3"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, all.String())
		}
	}
	if end != int64(all.Len()) || end != int64(len(readLog(t, s))) {
		t.Fatalf("offset %d, log has %d bytes", end, all.Len())
	}
	from := int64(strings.Index(all.String(), "second"))
	var tail bytes.Buffer
	if n, err := s.c.Logs(ctx, from, false, &tail); err != nil || n != end || tail.String() != all.String()[from:] {
		t.Fatalf("logs from %d: %d %v %q", from, n, err, tail.String())
	}
	var none bytes.Buffer
	if n, err := s.c.Logs(ctx, end, true, &none); err != nil || n != end || none.Len() != 0 {
		t.Fatalf("follow from the end of an exited agent: %d %v %q", n, err, none.String())
	}
	if _, err := s.c.Logs(ctx, end+1, false, io.Discard); err == nil {
		t.Fatal("offset past the end accepted")
	}
}

// notifyWriter signals when what it has received contains want.
type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func TestLogsFollowUntilExit(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.25; done"))
	w := &notifyWriter{want: "line1\n", seen: make(chan struct{})}
	type result struct {
		off int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		off, err := s.c.Logs(ctxFor(t, 10*time.Second), 0, true, w)
		done <- result{off, err}
	}()
	select {
	case <-w.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("first line not streamed")
	}
	// Streamed while the agent is still running, not buffered until the end.
	if st, err := s.c.Status(ctxFor(t, 5*time.Second)); err != nil || st.State != StateRunning {
		t.Fatalf("status while following: %+v %v", st, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := w.buf.String()
	for i := 1; i <= 6; i++ {
		if !strings.Contains(got, fmt.Sprintf("line%d\n", i)) {
			t.Errorf("followed log lacks line%d:\n%s", i, got)
		}
	}
	if !strings.Contains(got, "agent exited with code 0") || r.off != int64(len(got)) {
		t.Fatalf("follow ended at %d before the end:\n%s", r.off, got)
	}

	// A follow cut short by its context returns the offset reached.
	s2 := start(t, newRequest(t, "echo begin; sleep 30"))
	waitFor(t, 5*time.Second, "begin", func() bool { return strings.Contains(readLog(t, s2), "begin") })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var buf bytes.Buffer
	off, err := s2.c.Logs(ctx, 0, true, &buf)
	if !errors.Is(err, context.DeadlineExceeded) || off != int64(buf.Len()) || !strings.Contains(buf.String(), "begin") {
		t.Fatalf("cancelled follow: %d %v %q", off, err, buf.String())
	}
}

func TestStopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "sleep 300 & echo $! > grandchild.pid; wait")
	req.StopGrace = "5s"
	s := start(t, req)
	gc := readPIDFile(t, filepath.Join(req.TaskDir, "grandchild.pid"))
	st := waitState(t, s, StateRunning)
	if !alive(t, st.AgentPID) || !alive(t, gc) {
		t.Fatal("agent or grandchild not running")
	}
	st, err := s.c.Stop(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateStopped || st.Signal != "SIGTERM" || st.ExitCode != nil {
		t.Fatalf("status after stop %+v", st)
	}
	// SIGTERM was enough: the grace never ran out into a kill.
	if log := readLog(t, s); strings.Contains(log, "SIGKILL") {
		t.Fatalf("stop escalated to SIGKILL:\n%s", log)
	}
	if alive(t, st.AgentPID) || alive(t, gc) {
		t.Fatalf("agent alive %v, grandchild alive %v after stop", alive(t, st.AgentPID), alive(t, gc))
	}
	again, err := s.c.Stop(ctxFor(t, 2*time.Second))
	if err != nil || again.State != StateStopped || !again.EndedAt.Equal(*st.EndedAt) {
		t.Fatalf("second stop: %+v %v", again, err)
	}
	if fst, _ := ReadStatusFile(req.SessionDir); fst.State != StateStopped {
		t.Fatalf("status.json state %q", fst.State)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	t.Parallel()
	// Both the agent and its grandchild ignore SIGTERM.
	req := newRequest(t, `trap "" TERM; sleep 300 & echo $! > grandchild.pid; wait`)
	req.StopGrace = "1s"
	s := start(t, req)
	gc := readPIDFile(t, filepath.Join(req.TaskDir, "grandchild.pid"))
	st := waitState(t, s, StateRunning)
	t0 := time.Now()
	st, err := s.c.Stop(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The grace is honoured before the kill.
	if el := time.Since(t0); el < time.Second {
		t.Fatalf("stop returned after %s, before the 1s grace", el)
	}
	if st.State != StateStopped || st.Signal != "SIGKILL" {
		t.Fatalf("status after stop %+v", st)
	}
	if alive(t, gc) || groupAlive(st.AgentPID) {
		t.Fatal("process group survived SIGKILL")
	}
	if !st.GroupKilled || !slices.ContainsFunc(st.EndedProcesses, func(p Process) bool { return p.PID == gc }) {
		t.Fatalf("status %+v does not say the group, grandchild %d among it, was killed", st, gc)
	}
	log := readLog(t, s)
	term, kill := strings.Index(log, "SIGTERM to agent process group"), strings.Index(log, "SIGKILL to agent process group")
	if term < 0 || kill < term {
		t.Fatalf("log does not record SIGTERM then SIGKILL:\n%s", log)
	}
}

func TestDrainReceipt(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	ctx := ctxFor(t, 15*time.Second)
	r1, err := s.c.Drain(ctx, "claim-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r1.ClaimID != "claim-1" || r1.SessionID != "sess-1" || r1.State != StateStopped || r1.DrainedAt.IsZero() {
		t.Fatalf("receipt %+v", r1)
	}
	if !VerifyReceipt(s.req.Token, r1) {
		t.Fatal("receipt does not verify")
	}
	if VerifyReceipt(s.req.Token+"x", r1) {
		t.Fatal("receipt verifies with another token")
	}
	forged := r1
	forged.State = StateExited
	if VerifyReceipt(s.req.Token, forged) {
		t.Fatal("a receipt with an edited state verifies")
	}
	st, err := s.c.Status(ctx)
	if err != nil || !st.Sealed || st.State != StateStopped {
		t.Fatalf("status after drain %+v %v", st, err)
	}
	if fst, _ := ReadStatusFile(s.req.SessionDir); !fst.Sealed {
		t.Fatal("status.json not sealed")
	}
	path := filepath.Join(s.req.SessionDir, receiptsDir, "claim-1.json")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("receipt file: %v %v", fi, err)
	}

	r2, err := s.c.Drain(ctx, "claim-1", 0)
	if err != nil || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("second drain for the same claim: %+v %v, want %+v", r2, err, r1)
	}
	r3, err := s.c.Drain(ctx, "claim-2", 0)
	if err != nil || r3.ClaimID != "claim-2" || !VerifyReceipt(s.req.Token, r3) || r3.Proof == r1.Proof {
		t.Fatalf("drain for another claim: %+v %v", r3, err)
	}
	for _, bad := range []string{"", "../escape", ".hidden", "a/b"} {
		if _, err := s.c.Drain(ctx, bad, 0); err == nil {
			t.Errorf("claim id %q accepted", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(s.req.SessionDir, "escape.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a claim id escaped the receipts dir")
	}
}

// An agent that exits leaves nothing behind: what it started in the
// background is ended with its session, and the status names it.
func TestExitEndsWhatTheAgentLeft(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "sleep 300 & echo $! > grandchild.pid; exit 3")
	s := start(t, req)
	gc := readPIDFile(t, filepath.Join(req.TaskDir, "grandchild.pid"))
	var st Status
	waitFor(t, 30*time.Second, "the group ended", func() bool {
		var err error
		st, err = s.c.Status(ctxFor(t, 5*time.Second))
		return err == nil && st.State == StateExited && len(st.EndedProcesses) > 0 && !alive(t, gc)
	})
	if st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("status %+v: want exited 3", st)
	}
	if len(st.EndedProcesses) != 1 || st.EndedProcesses[0].PID != gc || st.EndedProcesses[0].Name != "sleep" || st.GroupKilled {
		t.Fatalf("ended processes %+v (killed %v), want only %d (sleep), ended by SIGTERM", st.EndedProcesses, st.GroupKilled, gc)
	}
	waitFor(t, 10*time.Second, "status.json to name it", func() bool {
		fst, err := ReadStatusFile(req.SessionDir)
		return err == nil && len(fst.EndedProcesses) == 1
	})
	if log := readLog(t, s); !strings.Contains(log, fmt.Sprintf("ending the agent's processes: %d (sleep)", gc)) {
		t.Fatalf("log does not say what was ended:\n%s", log)
	}
	// The controller lingers for readers of its status.
	if _, err := s.c.Health(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("controller gone after the group ended: %v", err)
	}
}

// The names of the processes a session's end lists are masked like the
// agent's output: the agent chooses them.
func TestEndedProcessNamesMasked(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `cp "$(command -v sleep)" ./hushhush && ./hushhush 300 & echo $! > grandchild.pid; sleep 1; exit 0`)
	req.Redact = []string{"hushhush"}
	s := start(t, req)
	readPIDFile(t, filepath.Join(req.TaskDir, "grandchild.pid"))
	var st Status
	waitFor(t, 30*time.Second, "the group ended", func() bool {
		var err error
		st, err = s.c.Status(ctxFor(t, 5*time.Second))
		return err == nil && len(st.EndedProcesses) > 0
	})
	masked := slices.ContainsFunc(st.EndedProcesses, func(p Process) bool { return p.Name == "***" })
	named := slices.ContainsFunc(st.EndedProcesses, func(p Process) bool { return strings.Contains(p.Name, "hushhush") })
	if !masked || named {
		t.Fatalf("ended processes %+v, want the secret's name masked", st.EndedProcesses)
	}
	if log := readLog(t, s); strings.Contains(log, "hushhush") {
		t.Fatalf("the log names the secret:\n%s", log)
	}
}
