package executor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Regression tests for another user on the host taking over a session
// through a workdir_root in a shared place (/srv/kandev, /tmp/x): every
// directory on the way to the helper and the task directory must be the
// login user's alone, checked on the host before it is used.

// launchRefused launches and wants a refusal naming path for reason.
func launchRefused(t *testing.T, f *launchFixture, path, reason string) {
	t.Helper()
	_, _, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"true"}})
	var oe *fsx.OwnershipError
	var re *remote.Error
	switch {
	case errors.As(err, &oe):
		if oe.Path != path || oe.Reason != reason {
			t.Fatalf("refused %s (%s), want %s (%s): %v", oe.Path, oe.Reason, path, reason, err)
		}
	case errors.As(err, &re):
		if re.Code != taskdir.CodeNotPrivate || !strings.Contains(re.Message, path+" "+reason) {
			t.Fatalf("helper refused with %s %q, want %s %s", re.Code, re.Message, path, reason)
		}
	default:
		t.Fatalf("launch with %s %s: %v", path, reason, err)
	}
	for _, want := range []string{"owner uid", "mode", "workdir_root"} {
		if !strings.Contains(err.Error()+hintOf(err), want) {
			t.Fatalf("refusal does not say %q: %v", want, err)
		}
	}
}

func hintOf(err error) string {
	var oe *fsx.OwnershipError
	if errors.As(err, &oe) {
		return oe.Hint()
	}
	return ""
}

// noTaskDirs: nothing was created for a task under root.
func noTaskDirs(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "tasks"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Fatalf("task directories were created: %v", entries)
	}
}

// A root another user made (or anyone can write) is refused before
// anything is created in it.
func TestSharedRootOwnedByAnotherUserRefused(t *testing.T) {
	needRoot(t)
	f := newLaunchFixture(t)
	shared := filepath.Join(t.TempDir(), "srv-kandev")
	mkdir(t, shared, 0o777, nobody)
	f.useRoot(t, shared)
	launchRefused(t, f, shared, fsx.ReasonOwner)
	noTaskDirs(t, shared)

	chmodOwn(t, shared, 0o777, os.Getuid())
	launchRefused(t, f, shared, fsx.ReasonWritable)
	noTaskDirs(t, shared)
}

// The reproduced attack: another uid pre-created tasks/ 0777 (while the
// root was open), to swap the victim's task dir for its own later.
func TestSharedRootTasksDirPlantedRefused(t *testing.T) {
	needRoot(t)
	f := newLaunchFixture(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "kandev"), 0o700, os.Getuid())
	tasks := mkdir(t, filepath.Join(root, "tasks"), 0o777, nobody)
	f.useRoot(t, root)
	launchRefused(t, f, tasks, fsx.ReasonOwner)
	noTaskDirs(t, root)

	chmodOwn(t, tasks, 0o777, os.Getuid())
	launchRefused(t, f, tasks, fsx.ReasonWritable)
	noTaskDirs(t, root)
}

// The other reproduced attack: the helper pre-planted (a genuine copy,
// so its sha256 matches) in a directory another user owns, to be swapped
// after the check. It is refused, never run.
func TestHelperPlantedByAnotherUserNeverRuns(t *testing.T) {
	needRoot(t)
	f := newLaunchFixture(t)
	local, err := locateHelpers().Find(localPlatform, nil)
	if err != nil {
		t.Fatal(err)
	}
	sha := local.SHA256
	b, err := os.ReadFile(local.Path)
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, f.root, 0o700, os.Getuid())
	bin := mkdir(t, filepath.Join(f.root, "bin"), 0o700, os.Getuid())
	shaDir := mkdir(t, filepath.Join(bin, sha), 0o777, nobody)
	planted := filepath.Join(shaDir, remote.HelperName)
	if err := os.WriteFile(planted, b, 0o755); err != nil {
		t.Fatal(err)
	}
	chmodOwn(t, planted, 0o755, nobody)
	launchRefused(t, f, shaDir, fsx.ReasonOwner)
	noTaskDirs(t, f.root)

	// Our own directory, but a helper file someone else owns.
	chmodOwn(t, shaDir, 0o700, os.Getuid())
	launchRefused(t, f, planted, fsx.ReasonOwner)

	// Ours, but a directory others can write: the file could be swapped.
	chmodOwn(t, planted, 0o755, os.Getuid())
	chmodOwn(t, shaDir, 0o733, os.Getuid())
	launchRefused(t, f, shaDir, fsx.ReasonWritable)
	noTaskDirs(t, f.root)
}

// Directories above the root follow StrictModes: a world-writable parent
// is refused unless it is sticky, like /tmp.
func TestRootUnderWritableParent(t *testing.T) {
	needRoot(t)
	f := newLaunchFixture(t)
	parent := mkdir(t, filepath.Join(t.TempDir(), "shared"), 0o777, os.Getuid())
	root := filepath.Join(parent, "kandev")
	f.useRoot(t, root)
	launchRefused(t, f, parent, fsx.ReasonWritableNoStk)
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("root created under a refused parent: %v", err)
	}

	chmodOwn(t, parent, fs.ModeSticky|0o777, os.Getuid())
	if _, _, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"true"}}); err != nil {
		t.Fatalf("under a sticky parent: %v", err)
	}
}

// Everything kandev-exec creates on the host is 0700, whatever the
// server's umask, down to the session directory; an existing task dir or
// .kandev/ that stopped being ours is refused on resume.
func TestCreatedRemoteDirsArePrivate(t *testing.T) {
	needRoot(t)
	old := syscall.Umask(0)
	f := newLaunchFixture(t) // its sshd, and so every remote command, runs under umask 000
	syscall.Umask(old)
	root := filepath.Join(t.TempDir(), "a", "b", "root")
	f.useRoot(t, root)
	task, s, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	local, err := locateHelpers().Find(localPlatform, nil)
	if err != nil {
		t.Fatal(err)
	}
	sha := local.SHA256
	for _, p := range []string{filepath.Dir(filepath.Dir(root)), filepath.Dir(root), root, filepath.Join(root, "bin"),
		filepath.Join(root, "bin", sha), filepath.Join(root, "bin", sha, remote.HelperName), filepath.Join(root, "tasks"),
		task.TaskDir, filepath.Join(task.TaskDir, ".kandev"), filepath.Join(task.TaskDir, ".kandev", "sessions"), s.SessionDir} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s is %v, want 0700", p, fi.Mode().Perm())
		}
	}

	meta := filepath.Join(task.TaskDir, ".kandev")
	chmodOwn(t, meta, 0o700, nobody)
	_, _, err = f.exec.Resume(context.Background(), task.ID, []string{"true"}, Reports{})
	var re *remote.Error
	if !errors.As(err, &re) || re.Code != taskdir.CodeNotPrivate || !strings.Contains(re.Message, meta+" "+fsx.ReasonOwner) {
		t.Fatalf("resume with .kandev owned by another user: %v", err)
	}
}

// nobody is the uid that plays "another user on the host".
const nobody = 65534

// needRoot: making a file another user's takes root (CI runs as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns fixtures to another uid and needs root (CI runs as root)")
	}
}

func mkdir(t *testing.T, p string, mode fs.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	chmodOwn(t, p, mode, uid)
	return p
}

func chmodOwn(t *testing.T, p string, mode fs.FileMode, uid int) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
}
