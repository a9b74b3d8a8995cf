// Package helpertest is what the tests that upload and run the real
// helper share: the helper built as a release ships it, the lookup that
// finds it, checks of what reached a host, and a repository to clone.
package helpertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
)

// platform is this test binary's platform, as helperbin names it.
var platform = runtime.GOOS + "/" + runtime.GOARCH

// Build builds the real helper, as a release ships it, into a directory
// of its own under this platform's helper name.
func Build(t testing.TB) string {
	t.Helper()
	return build(t)
}

// BuildSpeaking builds the real helper as Build does, but speaking
// protocol version v: a stale helper a host may still hold.
func BuildSpeaking(t testing.TB, v int) string {
	t.Helper()
	return build(t, "-ldflags", "-X github.com/kdlbs/kandev-exec/helper/protocol.protocol="+strconv.Itoa(v))
}

func build(t testing.TB, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), helperbin.Name(platform))
	args := append(append([]string{"build", "-trimpath", "-o", bin}, flags...), "github.com/kdlbs/kandev-exec/cmd/kandev-exec-helper")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// UseLocator points *find, a package's helper lookup, at l until the test
// ends.
func UseLocator(t testing.TB, find *func() *helperbin.Locator, l *helperbin.Locator) {
	t.Helper()
	old := *find
	*find = func() *helperbin.Locator { return l }
	t.Cleanup(func() { *find = old })
}

// UseHelper points *find at bin, a helper named for this platform, as
// the one found beside the CLI, with no cache and nothing embedded.
func UseHelper(t testing.TB, find *func() *helperbin.Locator, bin string) {
	t.Helper()
	UseLocator(t, find, &helperbin.Locator{Executable: filepath.Join(filepath.Dir(bin), "kandev-exec"), Version: "dev"})
}

// SHA256 is the hex sha256 of the file at p, the name it has on a host.
func SHA256(t testing.TB, p string) string {
	t.Helper()
	sum, err := helperbin.FileSHA256(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// SameContent fails the test unless the files a and b hold the same bytes.
func SameContent(t testing.TB, a, b string) {
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

// GitRepo makes a bare repository with one commit on main and returns
// its path and that commit.
func GitRepo(t testing.TB) (bare, head string) {
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
