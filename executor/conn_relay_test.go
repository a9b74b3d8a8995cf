package executor

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// On a server that forwards no ports, the controller is asked through
// the helper: status, a log streamed while the agent writes it, a stop
// with the controller's own answer (no fallback to the host's files).
func TestControllerThroughHelperRelay(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithoutTCPForwarding())
	ctx := context.Background()
	_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "echo first; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.exec.attachSession(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, err := f.exec.liveness(ctx, a)
	if err != nil || st.State != "running" {
		t.Fatalf("liveness through the relay: %+v, %v", st, err)
	}
	if a.hc.relay.refused == nil {
		t.Fatal("the controller was reached without the server refusing a channel")
	}
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() { _, err := f.exec.StreamLogs(ctx, s.ID, true, &log); done <- err }()
	stopped, err := f.exec.stopAttached(ctx, a)
	if err != nil || stopped.State != records.SessionStopped {
		t.Fatalf("stop through the relay: %+v, %v", stopped, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("follow: %v", err)
	}
	if !strings.Contains(log.String(), "first") {
		t.Fatalf("followed log: %q", log.String())
	}
}
