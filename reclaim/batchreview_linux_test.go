package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A proof whose batch's reading of the process table has grown old reads
// it again: a plan must not say remove for a directory a process entered
// after the reading, while the batch's earlier directories were proven.
func TestProveReadsAnOldProcessTableAgain(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, 2)
	h := newHost(30)
	defer h.scratch.removeAll()
	ctx := context.Background()
	h.proofProcs = &procsRecent{}
	if r := h.prove(ctx, targets[0]); r.Action != Remove {
		t.Fatalf("first directory: %+v, want remove", r)
	}
	pid, _ := sleeper(t, "sleep", targets[1].Path())
	h.proofProcs.at = time.Now().Add(-2 * proofTableAge) // the batch took longer than the bound
	if r := h.prove(ctx, targets[1]); r.Action == Remove {
		t.Fatalf("the plan says remove %s, which pid %d works in: %+v", targets[1].Path(), pid, r)
	}
}

// A directory named twice in one apply is proven and removed once; the
// second naming is refused rather than taking over the first's renamed
// directory while the first holds it.
func TestApplyNamedTwiceProvesOnce(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, 2)
	targets = append(targets, targets[1])
	rep, err := Apply(context.Background(), Request{Targets: targets, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, rep.Results[0], Remove, Removed, "")
	wantResult(t, rep.Results[1], Remove, Removed, "")
	if r := rep.Results[2]; r.Reason != Busy || r.Outcome != Failed || !strings.Contains(r.Detail, "named twice") {
		t.Fatalf("the second naming: %+v, want busy: named twice", r)
	}
	if _, err := os.Lstat(targets[1].Path()); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", targets[1].Path(), err)
	}
}

// A loose object under an upper-case name is hashed too: on a
// case-insensitive filesystem git opening objects/ab/cd... reads what was
// made as objects/AB/CD..., so a forged one there would hide work.
func TestLooseCheckHashesUpperCaseNames(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	blob := gitT(t, dir, "hash-object", "-w", "--stdin")
	objects := filepath.Join(dir, ".git", "objects")
	b, err := os.ReadFile(filepath.Join(objects, blob[:2], blob[2:]))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToUpper("ab" + strings.Repeat("c", len(blob)-2))
	writeFile(t, filepath.Join(objects, name[:2], name[2:]), string(b))
	if err := checkStore(context.Background(), objects); err == nil || !strings.Contains(err.Error(), "does not hash to its name") {
		t.Fatalf("checkStore = %v, want the object under %s found forged", err, name)
	}
}
