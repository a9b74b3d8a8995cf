package executor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
)

// The helper binaries and the repository the launch tests run against
// (internal/remote's tests have their own, for the upload alone).

// useLocator points the executor's helper lookup at l.
func useLocator(t *testing.T, l *helperbin.Locator) {
	t.Helper()
	old := locateHelpers
	locateHelpers = func() *helperbin.Locator { return l }
	t.Cleanup(func() { locateHelpers = old })
}

// useHelper makes bin, a helper named for this platform, the one found
// beside the CLI, with no cache and nothing embedded.
func useHelper(t *testing.T, bin string) {
	t.Helper()
	useLocator(t, &helperbin.Locator{Executable: filepath.Join(filepath.Dir(bin), "kandev-exec"), Version: "dev"})
}

// buildHelper builds the real helper, as a release ships it, into a
// directory of its own under this platform's helper name; ldflags are
// extra -X settings.
func buildHelper(t *testing.T, ldflags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), helperbin.Name(localPlatform))
	args := []string{"build", "-trimpath", "-o", bin}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", "-X "+strings.Join(ldflags, " -X "))
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, "../cmd/kandev-exec-helper")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func sha256Of(t *testing.T, p string) string {
	t.Helper()
	sum, err := helperbin.FileSHA256(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func sameContent(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s differs from %s", b, a)
	}
}

// gitRepo makes a bare repository with one commit on main and returns
// its path and that commit.
func gitRepo(t *testing.T) (bare, head string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	bare = filepath.Join(dir, "origin.git")
	run("init", "--quiet", "--bare", "--initial-branch=main", bare)
	run("init", "--quiet", "--initial-branch=main", "work")
	if err := os.WriteFile(filepath.Join(dir, "work", "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("-C", "work", "add", "README")
	run("-C", "work", "commit", "--quiet", "-m", "initial")
	run("-C", "work", "push", "--quiet", bare, "main")
	return bare, run("-C", "work", "rev-parse", "HEAD")
}
