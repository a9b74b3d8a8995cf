package executor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
)

// forgingController stands in front of a session's real controller: it
// relays everything (so its health proofs are the real ones) except the
// drain, whose real receipt it rewrites with forge before answering.
func forgingController(t *testing.T, realPort int, token string, forge func(controller.Receipt) controller.Receipt) int {
	t.Helper()
	real := controller.NewClient(nil, realPort, token)
	return standIn(t, realPort, func(relay http.Handler, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/drain" {
			relay.ServeHTTP(w, r)
			return
		}
		grace, _ := time.ParseDuration(r.URL.Query().Get("grace"))
		rec, err := real.Drain(r.Context(), r.URL.Query().Get("claim_id"), grace)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if signReceipt(token, rec) != rec.Proof {
			t.Errorf("signReceipt does not reproduce the controller's proof of %+v", rec)
		}
		_ = json.NewEncoder(w).Encode(forge(rec))
	})
}

// standIn listens in front of a session's real controller on realPort,
// handing each request to handle with a relay to the controller.
func standIn(t *testing.T, realPort int, handle func(relay http.Handler, w http.ResponseWriter, r *http.Request)) int {
	t.Helper()
	target, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(realPort))
	relay := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(relay, w, r) }))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// signReceipt is a proof made with the session's own token, as a
// controller makes it, over whatever fields r now has.
func signReceipt(token string, r controller.Receipt) string {
	msg := "receipt:" + r.ClaimID + ":" + r.SessionID + ":" + r.State
	if r.Killed {
		msg += ":killed"
	}
	h := hmac.New(sha256.New, []byte(token))
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}

// A receipt that does not verify proves nothing, even from an endpoint
// that proves its identity: the drain is uncertain, nothing is recorded
// as drained, the host is quarantined and the directory stays.
func TestForgedReceiptIsUncertain(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	cases := []struct {
		name  string
		forge func(token string, r controller.Receipt) controller.Receipt
	}{
		{"another claim", func(token string, r controller.Receipt) controller.Receipt {
			r.ClaimID = "claim-of-someone-else"
			r.Proof = signReceipt(token, r)
			return r
		}},
		{"another session", func(token string, r controller.Receipt) controller.Receipt {
			r.SessionID = "s-another-session"
			r.Proof = signReceipt(token, r)
			return r
		}},
		{"wrong proof", func(token string, r controller.Receipt) controller.Receipt {
			r.Proof = signReceipt(token+"x", r)
			return r
		}},
	}
	// Launched first: the first uncertain drain quarantines the host.
	sessions := make([]*records.Session, len(cases))
	tasks := make([]*records.Task, len(cases))
	for i := range cases {
		var err error
		if tasks[i], sessions[i], err = f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "300"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, task := sessions[i], tasks[i]
			token, err := f.exec.vault.LoadToken(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			port := forgingController(t, s.RemotePort, token, func(r controller.Receipt) controller.Receipt { return c.forge(token, r) })
			if _, err := records.Mutate(ctx, f.exec.cfg.Store, records.KindSession, s.ID, "session.test_port", func(x *records.Session) error {
				x.RemotePort = port
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			_, err = f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
			var pe *PendingError
			if !errors.As(err, &pe) || pe.Drain != records.DrainUncertain {
				t.Fatalf("archive with a forged receipt: %v, want pending with drain uncertain", err)
			}
			got, _, err := f.exec.GetTask(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Phase != records.PhaseCleanupPending || got.Teardown.Drain != records.DrainUncertain ||
				!strings.Contains(got.Teardown.Reason, "receipt does not verify") {
				t.Fatalf("task %s, drain %q, reason %q", got.Phase, got.Teardown.Drain, got.Teardown.Reason)
			}
			if _, err := os.Stat(task.TaskDir); err != nil {
				t.Fatalf("the directory after an uncertain drain: %v", err)
			}
			rs, _, err := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, s.ID)
			if err != nil || rs.Receipt != nil {
				t.Fatalf("session receipt %+v (%v), want none recorded", rs.Receipt, err)
			}
			h, _, err := f.exec.getHost(ctx, "prod")
			if err != nil || h.Status != records.HostQuarantined {
				t.Fatalf("host status %v (%v), want quarantined", h.Status, err)
			}
		})
	}
}

// An agent that ignores SIGTERM is killed within the drain's bound, not
// after the session's stop grace (10 s, beyond a bound of a third of a
// 24 s budget): the controller gets the bound with the request, and the
// receipt, recorded on the session, says its process group was killed.
func TestDrainKillsWithinItsBound(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "trap '' TERM; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive, Budget: 24 * time.Second})
	if err != nil {
		t.Fatalf("archive of an agent that ignores SIGTERM: %v", err)
	}
	if res.Drain != records.DrainDrained || res.Receipt == "" {
		t.Fatalf("drain %q, receipt %q, want drained with a receipt", res.Drain, res.Receipt)
	}
	rs, _, err := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Receipt == nil || !rs.Receipt.Killed || rs.State != records.SessionStopped {
		t.Fatalf("session %s, receipt %+v, want stopped with a receipt that says it was killed", rs.State, rs.Receipt)
	}
}
