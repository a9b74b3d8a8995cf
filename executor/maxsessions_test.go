package executor

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// A server that allows one session channel per connection at a time
// (MaxSessions 1), and one that also forwards no ports (as tinysshd): a
// launch, its logs, a stop and an archive work.
func TestOneSessionChannelPerConnection(t *testing.T) {
	t.Run("forwarding", func(t *testing.T) { oneSessionChannel(t, sshtest.WithMaxSessions(1)) })
	t.Run("no forwarding", func(t *testing.T) { oneSessionChannel(t, sshtest.WithMaxSessions(1), sshtest.WithoutTCPForwarding()) })
}

func oneSessionChannel(t *testing.T, opts ...sshtest.Option) {
	f := newLaunchFixture(t, opts...)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "echo first; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := f.exec.StreamLogs(ctx, s.ID, false, &log); err != nil {
		t.Fatal(err)
	}
	stopped, err := f.exec.StopSession(ctx, s.ID)
	if err != nil || stopped.State != records.SessionStopped {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	if _, err := f.exec.StreamLogs(ctx, s.ID, false, &log); err != nil || !strings.Contains(log.String(), "first") {
		t.Fatalf("logs after the stop: %q, %v", log.String(), err)
	}
	task2, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{task.ID, task2.ID} {
		res, err := f.exec.Teardown(ctx, TeardownOptions{Task: id, Trigger: records.TriggerArchive})
		if err != nil || res.Drain != records.DrainDrained || res.Reclaim != records.ReclaimRemoved {
			t.Fatalf("archive %s: %+v, %v", id, res, err)
		}
	}
	if task2Dir, err := os.Stat(task2.TaskDir); err == nil {
		t.Fatalf("archived directory left: %v", task2Dir.Name())
	}
}
