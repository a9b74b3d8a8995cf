package reclaim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func sha(c byte) string { return strings.Repeat(string(c), 64) }

// helperVersion makes <root>/bin/<name>/kandev-exec from prog, dated an
// hour back unless fresh.
func helperVersion(t *testing.T, root, name, prog string, fresh bool) string {
	t.Helper()
	dir := filepath.Join(root, "bin", name)
	copyProgram(t, prog, filepath.Join(dir, "kandev-exec"))
	if !fresh {
		old := time.Now().Add(-time.Hour)
		for _, p := range []string{filepath.Join(dir, "kandev-exec"), dir} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// Old helper versions go once nothing runs them; the current one, one a
// process runs, one just put there, a link and a directory another user
// owns or may write stay, each with its reason; a dry run removes
// nothing; a removal that was cut short is finished.
func TestPruneHelpers(t *testing.T) {
	requireRoot(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(t)
	if err := os.Mkdir(filepath.Join(root, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	helperVersion(t, root, sha('a'), sleep, false)            // current
	running := helperVersion(t, root, sha('b'), sleep, false) // a controller of an older version
	unused := helperVersion(t, root, sha('c'), sleep, false)
	helperVersion(t, root, sha('d'), sleep, true) // just uploaded by another kandev-exec
	foreign := helperVersion(t, root, sha('e'), sleep, false)
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	shared := helperVersion(t, root, sha('f'), sleep, false)
	if err := os.Chmod(shared, 0o770); err != nil {
		t.Fatal(err)
	}
	keep := outside(t)
	if err := os.Symlink(keep, filepath.Join(root, "bin", sha('1'))); err != nil {
		t.Fatal(err)
	}
	cut := helperVersion(t, root, pruningPrefix+sha('2'), sleep, false) // an earlier prune stopped
	writeFile(t, filepath.Join(root, "bin", "notes.txt"), "mine\n")
	pid, stop := sleeper(t, filepath.Join(running, "kandev-exec"), "/")

	req := HelpersRequest{Root: root, Keep: []string{sha('a')}, MinAgeSeconds: 600, DryRun: true}
	want := map[string]struct {
		action string
		reason Reason
	}{
		sha('a'):                 {"keep", CurrentHelper},
		sha('b'):                 {"keep", InUse},
		sha('c'):                 {"remove", ""},
		sha('d'):                 {"keep", TooRecent},
		sha('e'):                 {"keep", NotPrivate},
		sha('f'):                 {"keep", NotPrivate},
		sha('1'):                 {"keep", UnsafePath},
		pruningPrefix + sha('2'): {"remove", ""},
		"notes.txt":              {"keep", UnsafePath},
	}
	check := func(rep *HelpersReport, want map[string]struct {
		action string
		reason Reason
	}) {
		t.Helper()
		if rep.Root != root || len(rep.Versions) != len(want) {
			t.Fatalf("report %+v, want %d versions under %s", rep, len(want), root)
		}
		for _, v := range rep.Versions {
			w, ok := want[v.SHA256]
			if !ok || v.Action != w.action || v.Reason != w.reason {
				t.Errorf("%s: %s %s (%s), want %+v", v.SHA256, v.Action, v.Reason, v.Detail, w)
			}
			if v.Reason == "" && v.Bytes <= 0 {
				t.Errorf("%s: %d bytes", v.SHA256, v.Bytes)
			}
		}
	}
	rep, err := PruneHelpers(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	check(rep, want)
	for _, v := range rep.Versions {
		if v.SHA256 == sha('b') && !strings.Contains(v.Detail, "pid "+strconv.Itoa(pid)) {
			t.Errorf("in use, without its process: %s", v.Detail)
		}
	}
	for _, p := range []string{unused, cut, keep} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the dry run removed %s: %v", p, err)
		}
	}

	req.DryRun = false
	rep, err = PruneHelpers(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]struct {
		action string
		reason Reason
	}{}
	for k, w := range want {
		w.action = map[string]string{"keep": "skipped", "remove": "removed"}[w.action]
		applied[k] = w
	}
	check(rep, applied)
	for _, p := range []string{unused, cut} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(keep)); err != nil {
		t.Fatalf("the link's target went: %v", err)
	}

	// The controller ends: its version goes at the next prune.
	stop()
	rep, err = PruneHelpers(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Versions {
		if v.SHA256 == sha('b') && v.Action != "removed" {
			t.Fatalf("the version no process runs any more: %+v", v)
		}
	}
	if _, err := os.Lstat(running); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", running, err)
	}
}

// A root that is not the login user's alone is refused as a whole; one
// with no bin/ yet holds nothing.
func TestPruneHelpersRoots(t *testing.T) {
	if _, err := PruneHelpers(t.Context(), HelpersRequest{Root: "/tmp"}); err == nil || !strings.Contains(err.Error(), "/tmp") {
		t.Fatalf("/tmp: %v", err)
	}
	root := newRoot(t)
	rep, err := PruneHelpers(t.Context(), HelpersRequest{Root: root})
	if err != nil || len(rep.Versions) != 0 {
		t.Fatalf("no bin/: %+v, %v", rep, err)
	}
}
