package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The operator's path end to end: list what is under tasks/, plan with
// the local records, apply the candidates. Only this installation's
// directories with no live task are offered, and only those the full
// proof allows are removed; everything else is reported and untouched.
func TestListPlanApplyOrphans(t *testing.T) {
	requireRoot(t)
	bare, _ := origin(t)
	root := newRoot(t)
	orphan := prepared(t, root, "t-orphan", "task-gone", bare)
	prepared(t, root, "t-live", "task-live", bare)
	dirty := prepared(t, root, "t-dirty", "task-dirty", bare)
	writeFile(t, filepath.Join(dirty, "scratch.txt"), "work\n")
	foreign := prepared(t, root, "t-foreign", "task-f", bare)
	writeFile(t, filepath.Join(foreign, ".kandev", "owner.json"), `{"installation_id":"other","task_id":"task-f"}`)
	unmarked := prepared(t, root, "t-unmarked", "task-u", bare)
	if err := os.Remove(filepath.Join(unmarked, ".kandev", "owner.json")); err != nil {
		t.Fatal(err)
	}
	other := prepared(t, root, "t-other-user", "task-o", bare)
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(root, "tasks")
	for _, n := range []string{"a;b", "x\ny", "o'brien"} {
		if err := os.Mkdir(filepath.Join(tasks, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	keep := outside(t)
	if err := os.Symlink(keep, filepath.Join(tasks, "t-link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tasks, "t-file"), "not a directory\n")
	before := snapshot(t, root, keep)

	l, err := List(t.Context(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	onlyRemoved(t, before, snapshot(t, root, keep), "")
	view := LocalView{InstallationID: testInstallation, Phases: map[string]string{"task-live": "ready"}}
	want := map[string]struct {
		action Action
		reason Reason
	}{
		"a;b":          {Keep, UnsafePath},
		"o'brien":      {Keep, UnsafePath},
		"t-dirty":      {Remove, Orphan}, // a candidate; the proof keeps it
		"t-file":       {Keep, UnsafePath},
		"t-foreign":    {Keep, ForeignMarker},
		"t-link":       {Keep, UnsafePath},
		"t-live":       {Keep, LiveTask},
		"t-orphan":     {Remove, Orphan},
		"t-other-user": {Keep, NotPrivate},
		"t-unmarked":   {Keep, NoMarker},
		"x\ny":         {Keep, UnsafePath},
	}
	rows := Plan(*l, view, 0)
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	var targets []Target
	for _, r := range rows {
		w := want[filepath.Base(r.Path)]
		if r.Action != w.action || r.Reason != w.reason {
			t.Errorf("%q: %s/%s (%s), want %s/%s", r.Path, r.Action, r.Reason, r.Detail, w.action, w.reason)
		}
		if r.Action == Remove {
			if r.Bytes == 0 || r.Identity == nil {
				t.Errorf("%s: a candidate without size or identity: %+v", r.Path, r)
			}
			targets = append(targets, candidate(l.Root, r))
		}
	}
	results := apply(t, targets...)
	for _, r := range results {
		switch filepath.Base(r.Path) {
		case "t-orphan":
			wantResult(t, r, Remove, Removed, "")
		case "t-dirty":
			wantResult(t, r, Skip, Skipped, UntrackedFiles)
		}
	}
	onlyRemoved(t, before, snapshot(t, root, keep), orphan)
}

// A root or tasks/ that another user could change is refused as a whole:
// nothing under it is described as if it could be trusted.
func TestListRefusesSharedTasks(t *testing.T) {
	root := newRoot(t)
	if err := os.Mkdir(filepath.Join(root, "tasks"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "tasks"), 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := List(t.Context(), ListRequest{Root: root})
	if err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("List = %v", err)
	}
}

func TestListEmptyRoot(t *testing.T) {
	l, err := List(t.Context(), ListRequest{Root: newRoot(t)})
	if err != nil || len(l.Entries) != 0 {
		t.Fatalf("List = %+v, %v", l, err)
	}
}

// A root that does not exist holds nothing: an empty listing, not an
// error (reclaim lists every root a host's profiles name, some never
// used).
func TestListAbsentRootIsEmpty(t *testing.T) {
	root := filepath.Join(t.TempDir(), "never-made")
	l, err := List(t.Context(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if l.Root != root || len(l.Entries) != 0 {
		t.Fatalf("listing: %+v", l)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("the root was made: %v", err)
	}
}
