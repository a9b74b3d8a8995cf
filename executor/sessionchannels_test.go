package executor

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// launchStarted launches a session on f that prints "started" and
// sleeps.
func launchStarted(t *testing.T, f *launchFixture) *records.Session {
	t.Helper()
	_, s, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "echo started; exec sleep 60"}})
	if err != nil || s.State != records.SessionRunning {
		t.Fatalf("launch: %+v, %v", s, err)
	}
	return s
}

// `session show`, `session logs` and `session stop` each cost one
// connection and one channel: the log's answer brings the status with
// it, so logs opens no second channel after its stream to ask for it.
func TestSessionOpsOneChannelEach(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLogLevel("DEBUG1"))
	ctx := context.Background()
	s := launchStarted(t, f)
	asked := func(mark int) [2]int {
		log := f.srv.Log()[mark:]
		return [2]int{strings.Count(log, "Connection from"), strings.Count(log, "server_input_channel_open: ctype")}
	}
	for _, op := range []struct {
		name string
		run  func() (*records.Session, error)
	}{
		{"show", func() (*records.Session, error) { return f.exec.RefreshSession(ctx, s.ID) }},
		{"logs", func() (*records.Session, error) {
			var out strings.Builder
			got, err := f.exec.ShowLogs(ctx, s.ID, LogOptions{}, &out)
			if err == nil && !strings.Contains(out.String(), "started\n") {
				t.Errorf("logs printed %q", out.String())
			}
			return got, err
		}},
		{"stop", func() (*records.Session, error) { return f.exec.StopSession(ctx, s.ID) }},
	} {
		mark := len(f.srv.Log())
		got, err := op.run()
		if err != nil || got == nil {
			t.Fatalf("session %s: %+v, %v", op.name, got, err)
		}
		if n := asked(mark); n != [2]int{1, 1} {
			t.Fatalf("session %s: %d connections, %d channels; want one of each\n%s", op.name, n[0], n[1], f.srv.Log()[mark:])
		}
		if op.name == "stop" && got.State == records.SessionRunning {
			t.Fatalf("session stop left it %s", got.State)
		}
	}
}

// refusingSigned stands in front of a session's controller as one that
// takes no signed request: it refuses each as a controller refuses a
// signature it does not take (one from before signed requests refuses
// all, one from before the query was signed the log's), and relays the
// rest. refused counts the signed requests it refused.
func refusingSigned(t *testing.T, realPort int) (port int, refused *atomic.Int32) {
	t.Helper()
	refused = new(atomic.Int32)
	return standIn(t, realPort, func(relay http.Handler, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Signature") != "" && r.Header.Get("Authorization") == "" {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"missing or wrong bearer token"}`)
			return
		}
		relay.ServeHTTP(w, r)
	}), refused
}

// A controller that takes no signed request (one from before them, or,
// for the log, from before the query was signed, as a CLI newer than a
// session's helper meets) is still shown, followed, tailed and stopped:
// each operation proves it by health and uses the token.
func TestSessionOpsFallBackWhenSignedRefused(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	s := launchStarted(t, f)
	port, refused := refusingSigned(t, s.RemotePort)
	if _, err := records.Mutate(ctx, f.exec.cfg.Store, records.KindSession, s.ID, "session.test_port", func(x *records.Session) error {
		x.RemotePort = port
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.exec.RefreshSession(ctx, s.ID); err != nil || got.State != records.SessionRunning {
		t.Fatalf("session show: %+v, %v", got, err)
	}
	// A tail asks for the log's last bytes, which such a controller
	// refuses as one from before them would: asked as before, it shows
	// the same.
	for _, o := range []LogOptions{{}, {Tail: 100}} {
		var out strings.Builder
		if _, err := f.exec.ShowLogs(ctx, s.ID, o, &out); err != nil || !strings.Contains(out.String(), "started\n") {
			t.Fatalf("session logs %+v: %v, printed %q", o, err, out.String())
		}
	}
	if got, err := f.exec.StopSession(ctx, s.ID); err != nil || got.State == records.SessionRunning {
		t.Fatalf("session stop: %+v, %v", got, err)
	}
	var out strings.Builder
	if got, err := f.exec.ShowLogs(ctx, s.ID, LogOptions{Follow: true}, &out); err != nil || got.State == records.SessionRunning || !strings.Contains(out.String(), "started\n") {
		t.Fatalf("session logs -f once stopped: %+v, %v, printed %q", got, err, out.String())
	}
	if n := refused.Load(); n != 5 {
		t.Fatalf("%d signed requests refused, want one each for show, logs, logs --tail, stop and logs -f", n)
	}
}
