package cmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// A holder that stops renewing its claim mid-archive (frozen, not dead:
// across machines nothing but its lease says it is gone) loses the task
// once its lease expires; another operator's sweep takes the job over and
// finishes it. When the frozen one wakes, its next checkpoint is refused
// (exit 10) and it changes nothing: the directory is removed once.
func TestLeaseExpiresMidArchiveFinishedByAnotherSweep(t *testing.T) {
	bin := crashBin(t)
	srv := sshtest.NewServer(t)
	origin := gitOrigin(t)
	etcd := etcdtest.Start(t, 1)
	shared := []string{"KANDEV_EXEC_STORE=etcd://" + strings.Join(etcd.Endpoints(), ",") + "/lease", "KANDEV_EXEC_CLAIM_TTL=3s"}
	alice := joinRig(t, bin, srv, shared...)
	alice.setUp(origin, filepath.Join(t.TempDir(), "remote"))
	bob := joinRig(t, bin, srv, shared...)
	id, dir := alice.launch("sleep", "300")

	// Alice's archive freezes once its cleanup script ran, before it
	// records that and reclaims.
	archive := exec.Command(bin, "task", "archive", id, "--yes")
	archive.Env = append(append([]string{}, alice.env...), crashpoint.FreezeVar+"=cleanup.ran")
	var aliceErr strings.Builder
	archive.Stderr = &aliceErr
	if err := archive.Start(); err != nil {
		t.Fatal(err)
	}
	defer archive.Process.Kill()
	waitUntil(t, 2*time.Minute, "alice's archive to freeze at cleanup.ran", func() bool { return processState(archive.Process.Pid) == "T" })

	// Bob sweeps until the job is his and done: while alice's lease lasts
	// the task is hers (the sweep leaves it, exit 8).
	waitUntil(t, 2*time.Minute, "bob's sweep to finish the archive", func() bool {
		_, err := bob.run("", "sweep")
		return err == nil && bob.phase(id) == "absent"
	})
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after bob's sweep %s is still there (%v)", dir, err)
	}
	before := journalCount(t, bob, `"name":"`+id+`"`)

	// Alice wakes: her claim is gone, so her next checkpoint is refused.
	if err := archive.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := archive.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 10 {
		t.Fatalf("alice's archive, woken after losing its claim: %v, want exit 10\n%s", err, aliceErr.String())
	}
	if got := alice.phase(id); got != "absent" {
		t.Fatalf("after alice woke: phase %q, want absent", got)
	}
	if n := journalCount(t, bob, `"type":"task.absent"`, `"name":"`+id+`"`); n != 1 {
		t.Fatalf("the directory was recorded gone %d times, want once", n)
	}
	if after := journalCount(t, bob, `"name":"`+id+`"`); after != before {
		t.Fatalf("the task's journal went from %d to %d entries once alice woke: her late writes landed", before, after)
	}
}

// journalCount copies r's store to a directory and counts the journal
// lines holding every one of subs.
func journalCount(t *testing.T, r *crashRig, subs ...string) int {
	t.Helper()
	copyDir := filepath.Join(t.TempDir(), "copy")
	r.ok("store", "migrate", "--to", "file:"+copyDir)
	b, err := os.ReadFile(filepath.Join(copyDir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all && line != "" {
			n++
		}
	}
	return n
}

// processState is the state letter of pid in /proc (T: stopped), "" when
// it is gone.
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces, so read after the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
