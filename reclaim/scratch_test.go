package reclaim

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scratchLeft lists the names under root that are a scratch repository or
// its lock files.
func scratchLeft(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".proof-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitScratch waits for a scratch repository to appear under root.
func waitScratch(t *testing.T, root string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, n := range scratchLeft(t, root) {
			if scratchOf(n) != "" && !strings.Contains(n, ".lock") {
				if _, err := os.Stat(filepath.Join(root, n, "HEAD")); err == nil {
					return n // made, and git init ran in it: the fetch is next
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no scratch repository appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hangingTarget is a task directory under root whose upstream never
// answers, so that a proof of it holds its scratch repository.
func hangingTarget(t *testing.T, root, bare string) Target {
	t.Helper()
	dir := prepared(t, root, "t-hang", "task-hang", bare)
	gitT(t, dir, "remote", "set-url", "origin", "ssh://git@example.invalid/repo.git")
	t.Setenv("GIT_SSH_COMMAND", "sleep 120; :") // git appends its arguments
	return target(root, "t-hang", "task-hang")
}

// TestMain doubles as the helper process of
// TestScratchOfAKilledCallIsSwept: given a target, it proves it (and is
// killed while it fetches).
func TestMain(m *testing.M) {
	if arg := os.Getenv("KANDEV_RECLAIM_PROVE"); arg != "" {
		var tg Target
		if err := json.Unmarshal([]byte(arg), &tg); err != nil {
			panic(err)
		}
		_, _ = Prove(context.Background(), Request{Targets: []Target{tg}, ProbeTimeoutSeconds: 120})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A call SIGKILLed mid-fetch leaves its scratch repository and lock file;
// the next call that fetches in that root removes them, and leaves a
// look-alike that is not the login user's alone.
func TestScratchOfAKilledCallIsSwept(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	hang := hangingTarget(t, root, bare)
	arg, _ := json.Marshal(hang)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KANDEV_RECLAIM_PROVE="+string(arg))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	left := waitScratch(t, root)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := strings.Join(scratchLeft(t, root), " "); got != left+" "+left+".lock "+left+".lock.holder" {
		t.Fatalf("the killed call left %v, want its repository, lock file and holder note", got)
	}
	open := filepath.Join(root, ".proof-0123456789abcdef")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o770); err != nil { // writable by the group: not provably ours
		t.Fatal(err)
	}

	t.Setenv("GIT_SSH_COMMAND", "")
	prepared(t, root, "t-1", "task-1", bare)
	wantResult(t, prove(t, target(root, "t-1", "task-1"))[0], Remove, "", "")
	if got := scratchLeft(t, root); len(got) != 1 || got[0] != filepath.Base(open) {
		t.Fatalf("after the next call: %v, want only the look-alike", got)
	}
}

// A live call's scratch repository is never taken for a leftover: another
// call's sweep of the same root leaves it, and it goes when its call ends.
func TestScratchOfALiveCallIsKept(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	hang := hangingTarget(t, root, bare)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Prove(ctx, Request{Targets: []Target{hang}, ProbeTimeoutSeconds: 120})
		done <- err
	}()
	live := waitScratch(t, root)

	prepared(t, root, "t-1", "task-1", bare)
	wantResult(t, prove(t, target(root, "t-1", "task-1"))[0], Remove, "", "")
	if got := strings.Join(scratchLeft(t, root), " "); got != live+" "+live+".lock "+live+".lock.holder" {
		t.Fatalf("the other call's sweep left %v, want %s and its lock", got, live)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := scratchLeft(t, root); len(got) != 0 {
		t.Fatalf("the live call's end left %v", got)
	}
}

// Only the names a call makes are a scratch repository's: never an older
// helper's .proof-<digits> (swept by a rule of its own), nor anything
// else that starts alike.
func TestScratchNames(t *testing.T) {
	for name, want := range map[string]string{
		".proof-0123456789abcdef":             "0123456789abcdef",
		".proof-0123456789abcdef.lock":        "0123456789abcdef",
		".proof-0123456789abcdef.lock.holder": "0123456789abcdef",
		".proof-1234567890":                   "",
		".proof-0123456789ABCDEF":             "",
		".proof-0123456789abcdef0":            "",
		".proof-0123456789abcdef.lck":         "",
		".proof-0123456789abcdef/x":           "",
		"proof-0123456789abcdef":              "",
		".proof.lock":                         "",
	} {
		if got := scratchOf(name); got != want {
			t.Errorf("scratchOf(%q) = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{
		".proof-1234567890": "1234567890", ".proof-7": "7", ".proof-12345678901": "",
		".proof-0123456789abcdef": "", ".proof-12.lock": "", ".proof-": "", ".proof--1": "",
	} {
		if got := oldScratchOf(name); got != want {
			t.Errorf("oldScratchOf(%q) = %q, want %q", name, got, want)
		}
	}
}
