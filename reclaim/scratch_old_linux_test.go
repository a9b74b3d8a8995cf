package reclaim

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// An older helper's scratch repository (.proof-<digits>, never locked)
// is swept by the next call that fetches into its root under the same
// rule as a killed call's, and never while a process uses it: that one
// goes once the process has ended.
func TestOldScratchIsSweptUnlessInUse(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bare, _ := origin(t)
	root := newRoot(t)
	mk := func(name string, mode os.FileMode) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	mk(".proof-1234567890", 0o700)
	busy := mk(".proof-42", 0o700)
	mk(".proof-77", 0o770) // writable by the group: not provably ours
	_, stop := sleeper(t, sleep, busy)

	t.Setenv("GIT_SSH_COMMAND", "")
	prepared(t, root, "t-1", "task-1", bare)
	wantResult(t, prove(t, target(root, "t-1", "task-1"))[0], Remove, "", "")
	if got, want := scratchLeft(t, root), []string{".proof-42", ".proof-77"}; !slices.Equal(got, want) {
		t.Fatalf("after the first call: %v, want %v", got, want)
	}

	stop()
	wantResult(t, prove(t, target(root, "t-1", "task-1"))[0], Remove, "", "")
	if got, want := scratchLeft(t, root), []string{".proof-77"}; !slices.Equal(got, want) {
		t.Fatalf("once its process ended: %v, want %v", got, want)
	}
}
