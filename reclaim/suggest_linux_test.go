package reclaim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// shellHostile would be split at its space, end its command at ;, run
// $(...) and leave a quote open, were it put unquoted into a command.
const shellHostile = `k y;touch pwned;$(touch pwned)'"`

// hostileRoot is a workdir root by shellHostile, and beside it base/k,
// what a command that split the root's path at its space would reach
// (it holds an empty directory, for a find -delete to take), and cwd,
// where a command run from the path's text would write pwned.
func hostileRoot(t *testing.T) (root, decoy, cwd string) {
	t.Helper()
	base := physical(t, t.TempDir())
	root, decoy, cwd = filepath.Join(base, shellHostile), filepath.Join(base, "k"), filepath.Join(base, "cwd")
	for _, d := range []string{root, filepath.Join(decoy, "empty"), cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return root, decoy, cwd
}

// suggested is the command an operator is told to run: the first one
// between backticks in detail.
func suggested(t *testing.T, detail string) string {
	t.Helper()
	parts := strings.SplitN(detail, "`", 3)
	if len(parts) < 3 {
		t.Fatalf("detail %q suggests no command", detail)
	}
	return parts[1]
}

// runSuggested runs cmd as an operator pasting it would (sh, in cwd,
// with home as HOME) and checks that it ran nothing its paths hold.
func runSuggested(t *testing.T, cmd, cwd, home string) string {
	t.Helper()
	c := exec.Command("sh", "-c", cmd)
	c.Dir, c.Env = cwd, append(os.Environ(), "HOME="+home)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	if _, err := os.Lstat(filepath.Join(cwd, "pwned")); !os.IsNotExist(err) {
		t.Fatalf("%s ran a command its path holds: %v", cmd, err)
	}
	return string(out)
}

// unmarkedCommand is what the plan of root, whose one entry is a
// leftover with no marker, suggests running.
func unmarkedCommand(t *testing.T, root string) string {
	t.Helper()
	l, err := List(t.Context(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rows := Plan(*l, LocalView{InstallationID: testInstallation}, 0)
	if len(rows) != 1 || rows[0].Reason != UnmarkedLeftover {
		t.Fatalf("plan = %+v", rows)
	}
	return suggested(t, rows[0].Detail)
}

// The commands suggested for a leftover no marker proves ours act on
// that leftover alone, whatever its path holds: find -delete takes its
// empty directories and not the decoy's, ls lists it.
func TestUnmarkedLeftoverCommandsQuoteItsPath(t *testing.T) {
	root, decoy, cwd := hostileRoot(t)
	trash := filepath.Join(root, tasksDir, trashName("t-1"))
	if err := os.MkdirAll(filepath.Join(trash, metaDir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(trash, "notes.txt"), "mine\n")

	out := runSuggested(t, unmarkedCommand(t, root), cwd, cwd)
	if !strings.HasPrefix(out, trash+":\n") || !strings.Contains(out, "notes.txt") {
		t.Fatalf("the listing is not of %s:\n%s", trash, out)
	}

	if err := os.Remove(filepath.Join(trash, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	runSuggested(t, unmarkedCommand(t, root), cwd, cwd)
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("%s after its find -delete: %v", trash, err)
	}
	if _, err := os.Lstat(filepath.Join(decoy, "empty")); err != nil {
		t.Fatalf("the decoy lost its empty directory: %v", err)
	}
}

// The command suggested to keep a leftover whose name is taken moves
// that leftover, and nothing else, to ~/<dir>.kept.
func TestKeptLeftoverCommandMovesItAlone(t *testing.T) {
	root, _, cwd := hostileRoot(t)
	bare, _ := origin(t)
	trash := filepath.Join(root, tasksDir, trashName("t-1"))
	if err := os.Rename(prepared(t, root, "t-1", "task-1", bare), trash); err != nil {
		t.Fatal(err)
	}
	commit(t, trash, "work.txt", "agent work")
	if err := os.Mkdir(filepath.Join(root, tasksDir, "t-1"), 0o700); err != nil {
		t.Fatal(err)
	}

	r := apply(t, launchedT1(root, bare))[0]
	wantResult(t, r, Skip, Skipped, UnpushedCommits)
	home := t.TempDir()
	runSuggested(t, suggested(t, r.Detail[strings.Index(r.Detail, "move it out of the way"):]), cwd, home)
	if _, err := os.Lstat(filepath.Join(home, "t-1.kept", "work.txt")); err != nil {
		t.Fatalf("the leftover is not at ~/t-1.kept: %v", err)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("%s after the move: %v", trash, err)
	}
}

// The command suggested for a directory with no checkout names its
// path quoted.
func TestNotACheckoutCommandQuotesItsPath(t *testing.T) {
	path := "/srv/" + shellHostile + "/tasks/t-nogit"
	m := &taskdir.Owner{InstallationID: testInstallation, TaskID: "task-x", Created: time.Now()}
	_, reason, detail := planEntry(Entry{Marker: m, NoCheckout: true, AgeSeconds: 1}, LocalView{InstallationID: testInstallation}, 0, path)
	want := "`kandev-exec reclaim --apply --include-uncheckable '/srv/k y;touch pwned;$(touch pwned)'\"'\"'\"/tasks/t-nogit'`"
	if reason != NotACheckout || !strings.Contains(detail, want) {
		t.Fatalf("%s: %q, want it to hold %s", reason, detail, want)
	}
}
