package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// A host without git: a profile with a prepare script and no repository
// launches, shows its log, and archives, draining the agent; the
// directory, which no checkout proves saved, is kept.
func TestPrepareOnlyProfileWithoutGit(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithoutCommands("git"))
	ctx := context.Background()
	profile := "name: bare\nhost: prod\nworkdir_root: " + f.root + "\nshell: sh\nprepare_script: echo prepared > made.txt\nreclaim_task_dir: true\n"
	if _, err := f.exec.ApplyProfile(ctx, "bare.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "bare", Command: []string{"cat", "made.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := f.exec.StreamLogs(ctx, s.ID, true, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "\nprepared\n") {
		t.Fatalf("log %q", log.String())
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil || res.Phase != records.PhaseArchived || res.Drain != records.DrainDrained || !strings.HasPrefix(res.Reason, "not_a_checkout") {
		t.Fatalf("archive: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(f.root, "tasks", task.ID, "made.txt")); err != nil {
		t.Fatalf("task directory after the archive: %v", err)
	}
}
