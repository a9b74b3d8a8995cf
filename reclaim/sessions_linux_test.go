package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// sessionFiles writes, in dir's session s-1, what a drained controller
// leaves there: its pid, port, log, the log's generation, status.json
// and the drain's receipt.
func sessionFiles(t *testing.T, dir string) string {
	t.Helper()
	s := filepath.Join(dir, ".kandev", "sessions", "s-1")
	for name, content := range map[string]string{
		"controller.pid":        "4242\n",
		"controller.port":       "40001\n",
		"controller.log":        "[controller] started\n",
		"controller.log.gen":    `{"generation": "1-0a0b0c0d"}` + "\n",
		"status.json":           `{"state": "running", "sealed": true}` + "\n",
		"receipts/claim-1.json": `{"claim_id": "claim-1"}` + "\n",
	} {
		writeFile(t, filepath.Join(s, name), content)
	}
	return s
}

// wantKept checks a refused removal: changed since its proof, naming
// what changed, the directory back by its name.
func wantKept(t *testing.T, r Result, tg Target, dir, changed string) {
	t.Helper()
	wantResult(t, r, Fail, Failed, ChangedDuringProof)
	if !strings.Contains(r.Detail, changed) {
		t.Fatalf("detail %q does not name %s", r.Detail, changed)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".kandev")); err != nil {
		t.Fatalf("the directory did not get its name back: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(tg.Root, "tasks", trashName("t-1"))); !os.IsNotExist(err) {
		t.Fatalf("the trash name is still there: %v", err)
	}
}

// A checkout under a session's directory is proven with git like any
// other, and what happens in it after the proof is compared as anywhere
// in the tree: a commit made there, in no remote, keeps the directory.
func TestRemovalKeepsACommitInACheckoutUnderSessions(t *testing.T) {
	bare, _ := origin(t)
	var nested string
	dir, tg, h, ev, held := provenNow(t, func(dir string) {
		nested = filepath.Join(sessionFiles(t, dir), "repo")
		gitT(t, dir, "clone", "--quiet", bare, nested)
	})
	writeFile(t, filepath.Join(nested, "NEW"), "work after the proof\n")
	gitT(t, nested, "add", "NEW")
	gitT(t, nested, "commit", "--quiet", "-m", "unpushed work")
	head := gitT(t, nested, "rev-parse", "HEAD")

	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantKept(t, r, tg, dir, ".kandev/sessions/s-1/repo/")
	if got := gitT(t, nested, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD is %s after the refusal, was %s", got, head)
	}
	if got := gitT(t, nested, "log", "-1", "--format=%s"); got != "unpushed work" {
		t.Fatalf("the commit: %q", got)
	}
}

// A file written after the proof into a new subdirectory of a session's
// directory keeps the directory: only the controller's own files,
// directly in the session's directory, are left out.
func TestRemovalKeepsAFileInANewSubdirectoryOfASession(t *testing.T) {
	var s string
	dir, tg, h, ev, held := provenNow(t, func(dir string) { s = sessionFiles(t, dir) })
	late := filepath.Join(s, "notes", "late.txt")
	writeFile(t, late, "work after the proof\n")

	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantKept(t, r, tg, dir, ".kandev/sessions/s-1/notes")
	if b, err := os.ReadFile(late); err != nil || string(b) != "work after the proof\n" {
		t.Fatalf("late.txt after the refusal: %q, %v", b, err)
	}
}

// A checkout whose top is a session's directory holds work in its own
// files there: one edited after the proof keeps the directory.
func TestRemovalKeepsAnEditInACheckoutThatIsASessionsDirectory(t *testing.T) {
	bare, _ := origin(t)
	var s string
	dir, tg, h, ev, held := provenNow(t, func(dir string) {
		s = filepath.Join(dir, ".kandev", "sessions", "s-2")
		gitT(t, dir, "clone", "--quiet", bare, s)
	})
	writeFile(t, filepath.Join(s, "README"), "hello, edited after the proof\n")

	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantKept(t, r, tg, dir, ".kandev/sessions/s-2/README")
	if b, err := os.ReadFile(filepath.Join(s, "README")); err != nil || string(b) != "hello, edited after the proof\n" {
		t.Fatalf("README after the refusal: %q, %v", b, err)
	}
}

// A drained controller writes its own files until it exits: its log
// appended, rotated in place, status.json written again. None of that,
// after the proof, keeps the directory.
func TestRemovalIgnoresADrainedControllersOwnFiles(t *testing.T) {
	var s string
	dir, tg, h, ev, held := provenNow(t, func(dir string) { s = sessionFiles(t, dir) })
	f, err := os.OpenFile(filepath.Join(s, "controller.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[controller] drained for claim claim-1: agent stopped\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(s, "controller.log.new"), "[controller] kept\n")
	if err := os.Rename(filepath.Join(s, "controller.log.new"), filepath.Join(s, "controller.log")); err != nil {
		t.Fatal(err)
	}
	if err := fsx.WriteFile(filepath.Join(s, "status.json"), []byte(`{"state": "stopped", "sealed": true}`+"\n"), true); err != nil {
		t.Fatal(err)
	}

	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantResult(t, r, Remove, Removed, "")
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory after its removal: %v", err)
	}
}
