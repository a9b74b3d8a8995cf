package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// A host whose PATH holds only busybox's applets: host test lists what it
// has and lacks (git, for the profile that checks a repository out); a
// prepare-only profile launches, stops and archives there.
func TestBusyboxOnlyHost(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithBusyboxPath())
	ctx := context.Background()
	profile := "name: bare\nhost: prod\nworkdir_root: " + f.root + "\nshell: sh\nprepare_script: echo prepared > made.txt\n"
	if _, err := f.exec.ApplyProfile(ctx, "bare.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	rows := f.exec.TestHosts(ctx, []string{"prod"}, 1)
	if rows[0].Err != nil {
		t.Fatal(rows[0].Err)
	}
	got := map[string]Requirement{}
	for _, q := range rows[0].Requirements {
		got[q.Name] = q
	}
	for _, name := range []string{"sh", "uname", "gzip or sftp", "sha256sum or shasum"} {
		if q := got[name]; !q.Present || !strings.HasSuffix(q.Found, "busybox-path/"+strings.Fields(name)[0]) || !slices.Equal(q.Profiles, []string{"bare", "web"}) {
			t.Errorf("%s: %+v", name, q)
		}
	}
	if q := got["git"]; q.Present || !slices.Equal(q.Profiles, []string{"web"}) {
		t.Errorf("git: %+v", q)
	}
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "bare", Command: []string{"sh", "-c", "cat made.txt; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := f.exec.StopSession(ctx, s.ID)
	if err != nil || stopped.State != records.SessionStopped {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	var log bytes.Buffer
	if _, err := f.exec.StreamLogs(ctx, s.ID, false, &log); err != nil || !strings.Contains(log.String(), "\nprepared\n") {
		t.Fatalf("log %q, %v", log.String(), err)
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil || res.Phase != records.PhaseArchived {
		t.Fatalf("archive: %+v, %v", res, err)
	}
}

// The whole flow as a login user without root's rights: a launch (the
// helper uploaded under the user's own root), its log, a stop, host
// test and an archive.
func TestNonRootLoginUser(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLoginUser())
	ctx := context.Background()
	root := filepath.Join(f.srv.Home(), "kandev")
	profile := "name: mine\nhost: prod\nworkdir_root: " + root + "\nshell: sh\nprepare_script: id -u > uid.txt\n"
	if _, err := f.exec.ApplyProfile(ctx, "mine.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "mine", Command: []string{"sh", "-c", "echo uid=$(cat uid.txt); sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(task.TaskDir, root+"/") {
		t.Fatalf("task directory %s, want one under %s", task.TaskDir, root)
	}
	fi, err := os.Stat(task.TaskDir)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid == 0 {
		t.Fatalf("the task directory is root's")
	}
	stopped, err := f.exec.StopSession(ctx, s.ID)
	if err != nil || stopped.State != records.SessionStopped {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	var log bytes.Buffer
	if _, err := f.exec.StreamLogs(ctx, s.ID, false, &log); err != nil || !strings.Contains(log.String(), "\nuid=") || strings.Contains(log.String(), "uid=0\n") {
		t.Fatalf("log %q, %v", log.String(), err)
	}
	if rows := f.exec.TestHosts(ctx, []string{"prod"}, 1); rows[0].Err != nil || len(rows[0].Requirements) == 0 {
		t.Fatalf("host test: %+v", rows[0])
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil || res.Phase != records.PhaseArchived || res.Drain != records.DrainDrained {
		t.Fatalf("archive: %+v, %v", res, err)
	}
}
