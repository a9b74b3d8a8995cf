package executor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/remote"
)

// A workdir root on a noexec tmpfs: the launch is refused before any
// upload, naming the mount; nothing of the helper is left there.
func TestNoexecWorkdirRoot(t *testing.T) {
	needRoot(t)
	f := newLaunchFixture(t)
	mnt := filepath.Join(t.TempDir(), "noexec")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "noexec,size=32m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount a noexec tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	root := filepath.Join(mnt, "root")
	f.useRoot(t, root)
	var steps []string
	_, _, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"true"},
		Progress: func(step string) { steps = append(steps, step) }})
	var ne *remote.NoexecError
	if !errors.As(err, &ne) || ne.Mount != mnt || ne.Root != root {
		t.Fatalf("launch on a noexec root: %v (%+v)", err, ne)
	}
	if strings.Contains(err.Error(), StepUploading) {
		t.Fatalf("a refusal before any upload blamed on it: %v", err)
	}
	if !strings.Contains(err.Error(), mnt+", mounted noexec") || !strings.Contains(ne.Hint(), "workdir_root") {
		t.Fatalf("message %q, hint %q", err, ne.Hint())
	}
	for _, s := range steps {
		if strings.HasPrefix(s, StepUploading+" (") {
			t.Fatalf("uploaded to a noexec root: %v", steps)
		}
	}
	left, _ := filepath.Glob(filepath.Join(root, "bin", "*", "*"))
	hidden, _ := filepath.Glob(filepath.Join(root, "bin", "*", ".*"))
	if len(left)+len(hidden) != 0 {
		t.Fatalf("left on the host: %v %v", left, hidden)
	}
}
