package controller

import (
	"strings"
	"testing"
	"time"
)

// max_runtime is enforced by the controller alone: nobody asks it to stop.
func TestMaxRuntimeStopsTheAgent(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "echo working; sleep 300")
	req.MaxRuntime = "2s"
	before := time.Now().Truncate(time.Second)
	s := start(t, req)
	if s.resp.MaxRuntimeAt == nil || s.resp.MaxRuntimeAt.Before(before.Add(2*time.Second)) {
		t.Fatalf("start response max_runtime_at %v, want 2s from the start", s.resp.MaxRuntimeAt)
	}
	var st Status
	waitFor(t, time.Minute, "the bound to stop the agent", func() bool {
		fst, err := ReadStatusFile(req.SessionDir)
		st = fst
		return err == nil && fst.State == StateStopped
	})
	if st.StopReason != StopMaxRuntime || st.Signal != "SIGTERM" || st.MaxRuntimeAt == nil {
		t.Fatalf("status %+v, want stopped by SIGTERM for max_runtime", st)
	}
	if el := st.EndedAt.Sub(st.StartedAt); el < time.Second {
		t.Fatalf("stopped %s after the start, before the bound", el)
	}
	if log := readLog(t, s); !strings.Contains(log, "max_runtime 2s reached: stopping the agent") {
		t.Fatalf("log does not say why:\n%s", log)
	}
}

// idle_timeout stops an agent that has gone quiet, not one that writes.
func TestIdleTimeoutStopsAQuietAgent(t *testing.T) {
	t.Parallel()
	busy := newRequest(t, "i=0; while [ $i -lt 20 ]; do echo beat $i; i=$((i+1)); sleep 0.2; done")
	busy.IdleTimeout = "3s"
	b := start(t, busy)
	quiet := newRequest(t, "echo once; sleep 300")
	quiet.IdleTimeout = "2s"
	q := start(t, quiet)

	st := waitEnded(t, q.req.SessionDir)
	if st.State != StateStopped || st.StopReason != StopIdleTimeout || st.MaxRuntimeAt != nil {
		t.Fatalf("quiet agent: %+v, want stopped for idle_timeout", st)
	}
	if log := readLog(t, q); !strings.Contains(log, "no output for idle_timeout 2s: stopping the agent") {
		t.Fatalf("log does not say why:\n%s", log)
	}
	st = waitEnded(t, b.req.SessionDir)
	if st.State != StateExited || st.StopReason != "" || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("busy agent: %+v, want exited 0 on its own", st)
	}
}

func waitEnded(t *testing.T, dir string) Status {
	t.Helper()
	var st Status
	waitFor(t, time.Minute, "the agent to end", func() bool {
		fst, err := ReadStatusFile(dir)
		st = fst
		return err == nil && (fst.State == StateStopped || fst.State == StateExited)
	})
	return st
}
