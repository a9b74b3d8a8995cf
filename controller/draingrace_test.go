package controller

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A drain's grace, not the session's stop grace, decides when an agent
// that ignores SIGTERM is killed: with a stop grace of minutes the drain
// still ends with the group killed after its own grace, and the receipt
// names the kill under its proof.
func TestDrainHonoursGivenGrace(t *testing.T) {
	t.Parallel()
	// Both the agent and its grandchild ignore SIGTERM.
	req := newRequest(t, `trap "" TERM; sleep 300 & echo $! > grandchild.pid; wait`)
	req.StopGrace = "5m"
	s := start(t, req)
	gc := readPIDFile(t, filepath.Join(req.TaskDir, "grandchild.pid"))
	st := waitState(t, s, StateRunning)
	ctx := ctxFor(t, 90*time.Second)

	for _, bad := range []time.Duration{-time.Second, maxDrainGrace + time.Second} {
		err := s.c.call(ctx, http.MethodPost, "/v1/drain?claim_id=claim-1&grace="+bad.String(), new(Receipt))
		if err == nil || !strings.Contains(err.Error(), "grace must be") {
			t.Fatalf("drain with grace %s: %v, want refused", bad, err)
		}
	}
	if cur, err := s.c.Status(ctx); err != nil || cur.Sealed || cur.State != StateRunning {
		t.Fatalf("after refused drains: %+v %v, want running and not sealed", cur, err)
	}

	r, err := s.c.Drain(ctx, "claim-1", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateStopped || !r.Killed || !VerifyReceipt(s.req.Token, r) {
		t.Fatalf("receipt %+v, want stopped, killed and verifying", r)
	}
	forged := r
	forged.Killed = false
	if VerifyReceipt(s.req.Token, forged) {
		t.Fatal("a receipt that hides the kill verifies")
	}
	if alive(t, st.AgentPID) || alive(t, gc) || groupAlive(st.AgentPID) {
		t.Fatal("the agent's process group survived the drain")
	}
	if log := readLog(t, s); !strings.Contains(log, "stop grace 500ms passed: SIGKILL to agent process group") {
		t.Fatalf("log does not record the kill after the drain's grace:\n%s", log)
	}
}
