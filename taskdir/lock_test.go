package taskdir

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

func shortLockWait(t *testing.T) {
	t.Helper()
	old := lockWait
	lockWait = 300 * time.Millisecond
	t.Cleanup(func() { lockWait = old })
}

// waitFile waits for the file a script creates once it holds the lock.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// A preparation still running (here a slow prepare script an earlier,
// crashed launch left behind) keeps both a second script and a second
// prepare out of the task dir, naming the holder; once it ends, the next
// one goes ahead.
func TestTaskDirLockBusy(t *testing.T) {
	shortLockWait(t)
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	dir := mustPrepare(t, prepareReq(root, bare)).TaskDirAbs
	started, stop := filepath.Join(t.TempDir(), "started"), filepath.Join(t.TempDir(), "stop")

	type result struct {
		res *RunScriptResult
		err error
	}
	first := make(chan result, 1)
	go func() {
		res, err := RunScript(context.Background(), RunScriptRequest{Dir: dir, Shell: "/bin/sh",
			Script: `touch "$STARTED"; while [ ! -e "$STOP" ]; do sleep 0.05; done`,
			Env:    map[string]string{"STARTED": started, "STOP": stop}, TimeoutSeconds: 30}, nil)
		first <- result{res, err}
	}()
	waitFile(t, started)

	pid := strconv.Itoa(os.Getpid())
	if h := fsx.ReadHolder(filepath.Join(dir, ".kandev", "lock")); h == nil || h.PID != os.Getpid() {
		t.Fatalf("lock holder note %+v, want pid %s", h, pid)
	}
	_, err := RunScript(context.Background(), RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: "touch second-ran"}, nil)
	wantCode(t, err, CodeBusy)
	for _, s := range []string{dir, "pid " + pid, "an earlier launch's preparation is still running"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "second-ran")); err == nil {
		t.Fatal("the second script ran")
	}
	req := prepareReq(root, bare)
	req.Owner.OperationID = "op-2"
	_, err = Prepare(context.Background(), req)
	wantCode(t, err, CodeBusy)
	if !strings.Contains(err.Error(), "pid "+pid) {
		t.Fatalf("error = %v", err)
	}

	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("first script: %+v, %v", r.res, r.err)
	}
	mustPrepare(t, req)
	if res, err := RunScript(context.Background(), RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: "true"}, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("script after the first finished: %+v, %v", res, err)
	}
	if m := mode(t, filepath.Join(dir, ".kandev", "lock")); m != 0o600 {
		t.Fatalf("lock file mode %v", m)
	}
}

// A waiter gives up within the bound, not at the request's timeout.
func TestTaskDirLockWaitIsBounded(t *testing.T) {
	shortLockWait(t)
	dir := t.TempDir()
	release, err := LockTaskDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = LockTaskDir(ctx, dir)
	wantCode(t, err, CodeBusy)
	if ctx.Err() != nil {
		t.Fatal("the waiter held on until the request's timeout")
	}
	if d := time.Since(start); d < lockWait {
		t.Fatalf("gave up after %v, before the bound %v", d, lockWait)
	}
	release()
	release2, err := LockTaskDir(context.Background(), dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release2()
}

// A symlink planted at the lock file is never followed (the lock would
// otherwise create or write wherever it points).
func TestTaskDirLockRefusesSymlink(t *testing.T) {
	dir := emptyTaskDir(t)
	if err := os.Mkdir(filepath.Join(dir, ".kandev"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target")
	if err := os.Symlink(target, filepath.Join(dir, ".kandev", "lock")); err != nil {
		t.Fatal(err)
	}
	_, err := RunScript(context.Background(), RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: "touch ran"}, nil)
	wantCode(t, err, CodeUnsafePath)
	if _, err := os.Lstat(target); err == nil {
		t.Fatal("the symlink's target was created")
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the script ran")
	}

	// A symlinked .kandev is refused as well.
	dir2 := emptyTaskDir(t)
	if err := os.Symlink(t.TempDir(), filepath.Join(dir2, ".kandev")); err != nil {
		t.Fatal(err)
	}
	_, err = RunScript(context.Background(), RunScriptRequest{Dir: dir2, Shell: "/bin/sh", Script: "true"}, nil)
	wantCode(t, err, CodeUnsafePath)
}
