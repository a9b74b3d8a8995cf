package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// Crash convergence: a teardown killed (SIGKILL, no cleanup) at any of
// its durable steps is finished by the next `sweep`: the task ends where
// an uninterrupted run would have left it, the directory is removed once
// or kept with its reason (or, the host unreachable, left untouched for
// the job to retry), and nothing is removed after a resume took the task
// back. The CLI under test is built with the crashpoints tag, which
// makes it die at the point $KANDEV_EXEC_CRASH_AT names; no other build
// can.

// crashBin builds the CLI with crash points, once per test binary.
func crashBin(t *testing.T) string { return buildCLI(t, "-tags", "crashpoints") }

// buildCLI builds the CLI from this tree with the extra go build flags.
func buildCLI(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kandev-exec")
	args := append(append([]string{"build"}, flags...), "-o", bin, "..")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// crashRig is one state dir and one host, driven through the CLI.
type crashRig struct {
	t    *testing.T
	bin  string
	env  []string
	work string
}

func newCrashRig(t *testing.T, bin string, srv *sshtest.Server, origin string) *crashRig {
	t.Helper()
	r := joinRig(t, bin, srv)
	r.setUp(origin, filepath.Join(r.work, "remote"))
	return r
}

// joinRig is one operator's machine (state dir, ssh config) on srv, with
// env added to every run; nothing is stored yet.
func joinRig(t *testing.T, bin string, srv *sshtest.Server, env ...string) *crashRig {
	t.Helper()
	return joinRigAt(t, bin, srv, srv.Port(), env...)
}

// joinRigAt is joinRig reaching srv through port (a relay in front of it).
func joinRigAt(t *testing.T, bin string, srv *sshtest.Server, port int, env ...string) *crashRig {
	t.Helper()
	work := t.TempDir()
	cfg := filepath.Join(work, "ssh_config")
	conf := fmt.Sprintf("Host target\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
		port, srv.User(), srv.UserKeyPath)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return &crashRig{t: t, bin: bin, work: work, env: append(append(os.Environ(),
		"HOME="+work, "KANDEV_EXEC_STATE_DIR="+filepath.Join(work, "state"), "KANDEV_EXEC_SSH_CONFIG="+cfg,
		"SSH_AUTH_SOCK=", "NO_COLOR=1", crashpoint.EnvVar+"=", crashpoint.FreezeVar+"="), env...)}
}

// setUp adds and trusts the host and applies profile web, whose tasks
// live under remote and are reclaimed when archived.
func (r *crashRig) setUp(origin, remote string) {
	t, work := r.t, r.work
	t.Helper()
	profile := fmt.Sprintf("name: web\nhost: prod\nworkdir_root: %s\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\ncleanup_script: echo cleaned\nreclaim_task_dir: true\n",
		remote, origin)
	if err := os.WriteFile(filepath.Join(work, "web.yaml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	r.ok("host", "add", "prod", "--alias", "target")
	r.ok("host", "trust", "prod", "--accept-new")
	r.ok("profile", "apply", "-f", filepath.Join(work, "web.yaml"))
}

// run runs the CLI, dying at crashAt if set, and returns its stdout and
// how it ended.
func (r *crashRig) run(crashAt string, args ...string) (string, error) {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(append([]string{}, r.env...), crashpoint.EnvVar+"="+crashAt)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, errb.String()) // still an *exec.ExitError to errors.As
	}
	return out.String(), err
}

func (r *crashRig) ok(args ...string) string {
	r.t.Helper()
	out, err := r.run("", args...)
	if err != nil {
		r.t.Fatalf("kandev-exec %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (r *crashRig) launch(agent ...string) (id, dir string) {
	r.t.Helper()
	var v struct {
		Task struct {
			ID      string `json:"id"`
			TaskDir string `json:"task_dir"`
		} `json:"task"`
	}
	out := r.ok(append([]string{"task", "launch", "--profile", "web", "--json", "--"}, agent...)...)
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Task.ID == "" {
		r.t.Fatalf("launch output %q: %v", out, err)
	}
	return v.Task.ID, v.Task.TaskDir
}

// phase is the task's recorded phase, "" once it is forgotten.
func (r *crashRig) phase(id string) string {
	r.t.Helper()
	return r.show(id).Phase
}

// crashView is what the crash tests read of `task show --json`; Phase is
// "" once the task is forgotten.
type crashView struct {
	Phase, Drain, Reclaim, Reason string
	Job                           *struct {
		State    string
		Attempts int
		NextAt   *time.Time `json:"next_at"`
	}
}

func (r *crashRig) show(id string) crashView {
	r.t.Helper()
	var v crashView
	out, err := r.run("", "task", "show", id, "--json")
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return v
		}
		r.t.Fatalf("task show %s: %v", id, err)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		r.t.Fatal(err)
	}
	return v
}

// hostStatus is the host's recorded status.
func (r *crashRig) hostStatus(name string) string {
	r.t.Helper()
	var v struct{ Status string }
	if err := json.Unmarshal([]byte(r.ok("host", "show", name, "--json")), &v); err != nil {
		r.t.Fatal(err)
	}
	return v.Status
}

// removals counts the task's journal entries that record its directory
// proven gone: one at most, however often the teardown was cut short.
func (r *crashRig) removals(id string) int {
	b, err := os.ReadFile(filepath.Join(r.work, "state", "journal.jsonl"))
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"type":"task.absent"`) && strings.Contains(line, `"name":"`+id+`"`) {
			n++
		}
	}
	return n
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func TestCrashConvergence(t *testing.T) {
	bin := crashBin(t)
	srv := sshtest.NewServer(t)
	origin := gitOrigin(t)
	t.Run("removed", func(t *testing.T) { crashRemoved(t, bin, srv, origin) })
	t.Run("skipped", func(t *testing.T) { crashSkipped(t, bin, srv, origin) })
	t.Run("retried", func(t *testing.T) { crashRetried(t, bin, srv, origin) })
}

// crashRemoved: a clean task, killed at every durable step of archive
// and delete, ends absent (forgotten for delete), removed exactly once; a
// resume after a kill takes the task back and nothing is removed.
func crashRemoved(t *testing.T, bin string, srv *sshtest.Server, origin string) {
	// Every durable step of a teardown, in order.
	points := []string{"job.pending", "job.attempt", "task.draining", "session.drained", "task.destroying",
		"cleanup.ran", "reclaim.applied", "task.absent", "job.succeeded"}
	deletePoints := []string{"session.forgotten", "task.forgotten"}
	rig := newCrashRig(t, bin, srv, origin)
	for _, trigger := range []string{"archive", "delete"} {
		all := points
		if trigger == "delete" {
			all = append(append([]string{}, points...), deletePoints...)
		}
		for _, at := range all {
			id, dir := rig.launch("sleep", "300")
			_, err := rig.run(at, "task", trigger, id, "--yes")
			if !killedBySIGKILL(err) {
				shown, _ := rig.run("", "task", "show", id, "--json")
				t.Fatalf("%s killed at %s: ended %v, want SIGKILL (the point was never reached); the task:\n%s", trigger, at, err, shown)
			}
			rig.run("", "sweep") // its exit status says whether jobs remain: checked below
			want := "absent"
			if trigger == "delete" {
				want = ""
			}
			if got := rig.phase(id); got != want {
				t.Fatalf("%s killed at %s, then sweep: phase %q, want %q", trigger, at, got, want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s killed at %s, then sweep: %s still there (%v)", trigger, at, dir, err)
			}
			if n := rig.removals(id); n != 1 {
				t.Fatalf("%s killed at %s: the directory was recorded gone %d times, want once", trigger, at, n)
			}
		}
	}

	// Killed once the job is stored but before anything was done: a resume
	// takes the task back, the job is cancelled, and a sweep removes
	// nothing. (Its first session has ended, so it may be resumed.)
	id, dir := rig.launch("true")
	if _, err := rig.run("job.pending", "task", "archive", id, "--yes"); !killedBySIGKILL(err) {
		t.Fatalf("archive killed at job.pending: %v", err)
	}
	rig.ok("task", "resume", id, "--", "sleep", "300")
	rig.run("", "sweep")
	if got := rig.phase(id); got != "ready" {
		t.Fatalf("after resume and sweep: phase %q, want ready", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Fatalf("after resume and sweep the checkout is gone: %v", err)
	}
	if n := rig.removals(id); n != 0 {
		t.Fatalf("a resumed task's directory was removed")
	}
}

// crashSkipped: a task with a staged change is drained and cleaned up but
// its directory is kept (dirty_worktree). Killed at the steps where the
// skip is decided and recorded, then swept, it ends archived with the
// same reason, the job done, and the directory and the change still
// there; a delete ends the same way, not forgotten.
func crashSkipped(t *testing.T, bin string, srv *sshtest.Server, origin string) {
	rig := newCrashRig(t, bin, srv, origin)
	for _, c := range []struct{ trigger, at string }{
		{"archive", "task.destroying"}, {"archive", "reclaim.applied"}, {"archive", "task.archived"},
		{"archive", "job.succeeded"}, {"delete", "reclaim.applied"}, {"delete", "task.archived"},
		{"delete", "job.succeeded"},
	} {
		id, dir := rig.launch("sleep", "300")
		change := filepath.Join(dir, "notes.txt")
		if err := os.WriteFile(change, []byte("unsaved work\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", dir, "add", "notes.txt").CombinedOutput(); err != nil {
			t.Fatalf("git add: %v\n%s", err, out)
		}
		if _, err := rig.run(c.at, "task", c.trigger, id, "--yes"); !killedBySIGKILL(err) {
			t.Fatalf("%s killed at %s: ended %v, want SIGKILL (the point was never reached)", c.trigger, c.at, err)
		}
		rig.run("", "sweep")
		v := rig.show(id)
		if v.Phase != "archived" || v.Reclaim != "skipped" || !strings.HasPrefix(v.Reason, "dirty_worktree") {
			t.Fatalf("%s killed at %s, then sweep: phase %q, reclaim %q, reason %q; want archived, skipped, dirty_worktree",
				c.trigger, c.at, v.Phase, v.Reclaim, v.Reason)
		}
		if v.Job == nil || v.Job.State != "succeeded" {
			t.Fatalf("%s killed at %s, then sweep: job %+v, want succeeded", c.trigger, c.at, v.Job)
		}
		if b, err := os.ReadFile(change); err != nil || string(b) != "unsaved work\n" {
			t.Fatalf("%s killed at %s, then sweep: the kept change is %q, %v", c.trigger, c.at, b, err)
		}
		if n := rig.removals(id); n != 0 {
			t.Fatalf("%s killed at %s: a kept directory was recorded gone %d times", c.trigger, c.at, n)
		}
	}
}

// crashRetried: the host refuses connections, so the drain is
// unreachable: cleanup_pending, the directory untouched, the host
// quarantined, the job waiting to retry. Killed at each step of that
// path, then swept while the host is still down, every task ends there;
// once the host is back and readmitted, archiving again removes each
// directory exactly once.
func crashRetried(t *testing.T, bin string, srv *sshtest.Server, origin string) {
	relay := sshtest.NewRelay(t, srv.Addr())
	rig := joinRigAt(t, bin, srv, relay.Port())
	rig.setUp(origin, filepath.Join(rig.work, "remote"))
	type pending struct{ id, dir, at string }
	var tasks []pending
	for i, at := range []string{"job.attempt", "task.draining", "host.quarantined", "task.cleanup_pending", "job.failed"} {
		if i > 0 {
			relay.Pass()
			rig.ok("host", "readmit", "prod", "--reason", "back up")
		}
		id, dir := rig.launch("sleep", "300")
		tasks = append(tasks, pending{id, dir, at})
		relay.Refuse()
		if _, err := rig.run(at, "task", "archive", id, "--yes"); !killedBySIGKILL(err) {
			t.Fatalf("archive killed at %s: ended %v, want SIGKILL (the point was never reached)", at, err)
		}
		rig.run("", "sweep")
		v := rig.show(id)
		if v.Phase != "cleanup_pending" || v.Drain != "unreachable" {
			t.Fatalf("archive killed at %s, then sweep: phase %q, drain %q; want cleanup_pending, unreachable", at, v.Phase, v.Drain)
		}
		if v.Job == nil || v.Job.State != "retry_wait" || v.Job.Attempts < 1 || v.Job.NextAt == nil {
			t.Fatalf("archive killed at %s, then sweep: job %+v, want retry_wait with its next retry", at, v.Job)
		}
		if got := rig.hostStatus("prod"); got != "quarantined" {
			t.Fatalf("archive killed at %s, then sweep: host %s, want quarantined", at, got)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			t.Fatalf("archive killed at %s, then sweep: the checkout was touched: %v", at, err)
		}
		if n := rig.removals(id); n != 0 {
			t.Fatalf("archive killed at %s: an unreachable task's directory was recorded gone", at)
		}
	}
	relay.Pass()
	rig.ok("host", "readmit", "prod", "--reason", "back up")
	for _, p := range tasks {
		rig.ok("task", "archive", p.id, "--yes")
		if got := rig.phase(p.id); got != "absent" {
			t.Fatalf("killed at %s, archived again with the host back: phase %q, want absent", p.at, got)
		}
		if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("killed at %s, archived again with the host back: %s still there (%v)", p.at, p.dir, err)
		}
		if n := rig.removals(p.id); n != 1 {
			t.Fatalf("killed at %s: the directory was recorded gone %d times, want once", p.at, n)
		}
	}
}

// gitOrigin is a bare repository with one commit on main.
func gitOrigin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	bare := filepath.Join(dir, "app.git")
	run("init", "-q", "--bare", bare)
	run("init", "-q", "-b", "main", "seed")
	run("-C", "seed", "commit", "-q", "--allow-empty", "-m", "first")
	run("-C", "seed", "push", "-q", bare, "main")
	return bare
}
