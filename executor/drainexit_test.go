package executor

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// exitingController stands in front of a session's real controller: it
// relays everything, but a drain request first sends the controller
// SIGTERM (the exit its linger's end or a lost directory starts too) and
// reaches it only once the exit got as far as reached says: at once,
// past closing its listener, or past the process's end.
func exitingController(t *testing.T, realPort, pid int, reached func() bool) int {
	t.Helper()
	return standIn(t, realPort, func(relay http.Handler, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/drain" {
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM to controller %d: %v", pid, err)
			}
			for deadline := time.Now().Add(10 * time.Second); !reached(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("controller %d: its exit never got that far", pid)
					break
				}
			}
		}
		relay.ServeHTTP(w, r)
	})
}

// exitStages: how far the controller's exit gets before the drain
// request reaches it.
func exitStages(port, pid int) []func() bool {
	return []func() bool{
		func() bool { return true },
		func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err == nil {
				c.Close()
			}
			return err != nil
		},
		func() bool { return syscall.Kill(pid, 0) != nil },
	}
}

// busy keeps n goroutines spinning until the test ends: the loaded
// machine under which the race was seen.
func busy(t *testing.T, n int) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for range n {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
}

// Archiving a task whose agent has exited, while its controller exits
// (the drain request is answered, refused, cut off or failed, depending
// on how far the exit got), on a loaded machine, is drained every time: the host shows the
// controller gone, or stops it, and its recorded end decides. It never
// ends uncertain, which would quarantine a healthy host.
func TestArchiveWhileControllerExits(t *testing.T) {
	f := newLaunchFixture(t)
	busy(t, 3)
	ctx := context.Background()
	for i := range 9 {
		task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, s.SessionDir, "exited")
		stages := exitStages(s.RemotePort, s.PID)
		port := exitingController(t, s.RemotePort, s.PID, stages[i%len(stages)])
		if _, err := records.Mutate(ctx, f.exec.cfg.Store, records.KindSession, s.ID, "session.test_port", func(x *records.Session) error {
			x.RemotePort = port
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
		if err != nil {
			t.Fatalf("round %d: archive while the controller exits: %v", i, err)
		}
		if res.Drain != records.DrainDrained || res.Phase != records.PhaseArchived {
			t.Fatalf("round %d: drain %s, phase %s (%s), want drained and archived", i, res.Drain, res.Phase, res.Reason)
		}
		h, _, err := f.exec.getHost(ctx, "prod")
		if err != nil || h.Status != records.HostAdmitted {
			t.Fatalf("round %d: host status %v (%v), want admitted", i, h.Status, err)
		}
		rs, _, err := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, s.ID)
		if err != nil || !rs.State.Ended() {
			t.Fatalf("round %d: session %+v (%v), want it ended", i, rs, err)
		}
	}
}
