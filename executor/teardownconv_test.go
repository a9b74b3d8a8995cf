package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// An archive of a task on a host with the helper cached makes one
// connection and runs one command: the helper's conversation, opened as
// the host is connected and beside the drain, carries the cleanup script
// and the removal; the drain itself is the controller's own channel.
// sshd's log counts them. The receipt, the script's output and the proof
// of the removal are all still there.
func TestArchiveIsOneHelperCommand(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLogLevel("DEBUG1"))
	profile := "name: web\nhost: prod\nworkdir_root: " + f.root + "\nshell: sh\nrepositories:\n  - name: app\n    url: " + f.bare +
		"\n    branch: main\nreclaim_task_dir: true\ncleanup_script: echo cleaned up\n"
	ctx := context.Background()
	if _, err := f.exec.ApplyProfile(ctx, "web.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	mark := len(f.srv.Log())
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil {
		t.Fatal(err)
	}
	if res.Phase != records.PhaseAbsent || res.Drain != records.DrainDrained || res.Receipt == "" || res.Reclaim != records.ReclaimRemoved {
		t.Fatalf("archive: %+v; want absent, drained with a receipt, removed", res)
	}
	got, _, err := f.exec.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Teardown == nil || !strings.Contains(got.Teardown.CleanupOutput, "cleaned up") || got.Teardown.Proof == nil {
		t.Fatalf("teardown %+v; want the cleanup script's output and the removal's proof", got.Teardown)
	}
	log := f.srv.Log()[mark:]
	conns, sessions, commands := strings.Count(log, "Connection from"), strings.Count(log, "server_input_channel_open: ctype session"),
		strings.Count(log, "Starting session: command")
	if conns != 1 || sessions != 1 || commands != 1 {
		t.Fatalf("archive: %d connections, %d session channels, %d commands; want one of each\n%s", conns, sessions, commands, log)
	}
}

// Where the helper is gone from the host, the archive puts it back in
// place and goes on: each call then runs it anew.
func TestArchivePutsAMissingHelperInPlace(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.root, "bin")); err != nil {
		t.Fatal(err)
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil {
		t.Fatal(err)
	}
	if res.Phase != records.PhaseAbsent || res.Drain != records.DrainDrained || res.Receipt == "" {
		t.Fatalf("archive: %+v; want absent, drained with a receipt", res)
	}
	if bins, _ := filepath.Glob(filepath.Join(f.root, "bin", "*", "kandev-exec")); len(bins) != 1 {
		t.Fatalf("helpers in place after the archive: %q; want the one put back", bins)
	}
}
