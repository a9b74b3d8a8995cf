package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/hostops"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// uploadFixture is a real sshd that runs with umask 077, so a helper that
// is not chmod'ed explicitly would come out 0700.
type uploadFixture struct {
	srv    *sshtest.Server
	target *ssh.Target
	exec   *Executor
	root   string
}

func newUploadFixture(t *testing.T) *uploadFixture {
	t.Helper()
	old := syscall.Umask(0o077)
	srv := sshtest.NewServer(t)
	syscall.Umask(old)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ov := ssh.Overrides{Port: srv.Port(), User: srv.User(), IdentityFiles: []string{srv.UserKeyPath}, IdentitiesOnly: true}
	tg, err := ssh.Resolve(context.Background(), "127.0.0.1", ov, ssh.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &uploadFixture{srv: srv, target: tg, exec: New(Config{Store: st, StateDir: dir}), root: filepath.Join(t.TempDir(), "kandev root")}
}

func (f *uploadFixture) dial(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial(context.Background(), f.target, ssh.DialOptions{Mode: ssh.Record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// useLocalBinary points the executor's own-binary lookup at path.
func useLocalBinary(t *testing.T, path string) {
	t.Helper()
	old := localExecutable
	localExecutable = func() (string, error) { return path, nil }
	t.Cleanup(func() { localExecutable = old })
}

// fakeBinary is random bytes big enough for several concurrent SFTP writes.
func fakeBinary(t *testing.T) (path string, sha string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "kandev-exec")
	b := make([]byte, 3<<20)
	rand.Read(b)
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sha, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, sha
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

func TestEnsureHelperUploadsOnceThenCached(t *testing.T) {
	f := newUploadFixture(t)
	bin, sha := fakeBinary(t)
	useLocalBinary(t, bin)
	c := f.dial(t)
	ctx := context.Background()

	h, uploaded, err := f.exec.EnsureHelper(ctx, c, f.root, localPlatform)
	if err != nil || !uploaded {
		t.Fatalf("first EnsureHelper = %+v, %v, %v", h, uploaded, err)
	}
	remote := h.path()
	if want := filepath.Join(f.root, "bin", sha, "kandev-exec"); remote != want {
		t.Fatalf("path = %s, want %s", remote, want)
	}
	sameContent(t, bin, remote)
	fi, err := os.Stat(remote)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode = %v under umask 077, want 0700", fi.Mode().Perm())
	}

	again, uploaded, err := f.exec.EnsureHelper(ctx, c, f.root, localPlatform)
	if err != nil || uploaded || again != h {
		t.Fatalf("second EnsureHelper = %q, %v, %v", again, uploaded, err)
	}
	fi2, err := os.Stat(remote)
	if err != nil || !fi2.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, fi2) {
		t.Fatalf("cached helper was rewritten: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(remote)); len(entries) != 1 {
		t.Fatalf("leftovers beside the helper: %v", entries)
	}
}

func TestEnsureHelperReplacesCorruptCopy(t *testing.T) {
	f := newUploadFixture(t)
	bin, _ := fakeBinary(t)
	useLocalBinary(t, bin)
	c := f.dial(t)
	ctx := context.Background()
	h, _, err := f.exec.EnsureHelper(ctx, c, f.root, localPlatform)
	if err != nil {
		t.Fatal(err)
	}
	remote := h.path()
	for name, damage := range map[string]func() error{
		"bytes overwritten": func() error { return os.WriteFile(remote, []byte("truncated"), 0o755) },
		"not executable":    func() error { return os.Chmod(remote, 0o644) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		got, uploaded, err := f.exec.EnsureHelper(ctx, c, f.root, localPlatform)
		if err != nil || !uploaded || got != h {
			t.Fatalf("%s: EnsureHelper = %+v, %v, %v", name, got, uploaded, err)
		}
		sameContent(t, bin, remote)
		if fi, err := os.Stat(remote); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v", name, fi.Mode(), err)
		}
	}
}

// Twelve launches on one host, each on its own connection, upload once.
func TestEnsureHelperConcurrentUploadsOnce(t *testing.T) {
	f := newUploadFixture(t)
	bin, _ := fakeBinary(t)
	useLocalBinary(t, bin)
	const n = 12
	clients := make([]*ssh.Client, n)
	for i := range clients {
		clients[i] = f.dial(t)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		uploads  int
		paths    = map[string]bool{}
		failures []error
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, up, err := f.exec.EnsureHelper(context.Background(), c, f.root, localPlatform)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
			}
			if up {
				uploads++
			}
			paths[p.path()] = true
		}()
	}
	wg.Wait()
	if len(failures) > 0 || uploads != 1 || len(paths) != 1 {
		t.Fatalf("uploads = %d, paths = %v, errors = %v", uploads, paths, failures)
	}
	for p := range paths {
		sameContent(t, bin, p)
	}
}

func TestEnsureHelperUnsupportedPlatform(t *testing.T) {
	e := New(Config{})
	_, uploaded, err := e.EnsureHelper(context.Background(), nil, "~/.kandev", "freebsd/amd64")
	want := `unsupported remote platform "freebsd/amd64" — kandev-exec supports linux/{amd64,arm64} and darwin/{amd64,arm64}`
	var upe *UnsupportedPlatformError
	if uploaded || err == nil || err.Error() != want || !errors.As(err, &upe) {
		t.Fatalf("error = %v", err)
	}
}

// A dead connection is an error, never "needs upload".
func TestEnsureHelperTransportFailure(t *testing.T) {
	f := newUploadFixture(t)
	bin, _ := fakeBinary(t)
	useLocalBinary(t, bin)
	c := f.dial(t)
	c.Close()
	remote, uploaded, err := f.exec.EnsureHelper(context.Background(), c, f.root, localPlatform)
	if err == nil || uploaded || remote != (remoteHelper{}) {
		t.Fatalf("EnsureHelper on a closed client = %+v, %v, %v", remote, uploaded, err)
	}
	if _, err := os.Stat(f.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("root exists after a failed check: %v", err)
	}
}

// Another platform's helper comes from beside the binary, else the cache.
func TestEnsureHelperCrossPlatformBinary(t *testing.T) {
	f := newUploadFixture(t)
	other := "linux/arm64"
	if localPlatform == other {
		other = "linux/amd64"
	}
	bin, _ := fakeBinary(t)
	useLocalBinary(t, bin)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir()) // darwin's cache dir hangs off HOME
	c := f.dial(t)
	ctx := context.Background()

	_, _, err := f.exec.EnsureHelper(ctx, c, f.root, other)
	if err == nil || !strings.Contains(err.Error(), "make helpers") {
		t.Fatalf("missing cross binary: %v", err)
	}
	name := "kandev-exec-" + strings.ReplaceAll(other, "/", "-")
	cacheDir, _ := os.UserCacheDir()
	cached := filepath.Join(cacheDir, "kandev-exec", name)
	beside := filepath.Join(filepath.Dir(bin), name)
	for _, p := range []string{cached, beside} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("helper for "+other+" at "+p), 0o755); err != nil {
			t.Fatal(err)
		}
		sha, err := fileSHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		h, uploaded, err := f.exec.EnsureHelper(ctx, c, f.root, other)
		if err != nil || !uploaded || h.path() != filepath.Join(f.root, "bin", sha, "kandev-exec") {
			t.Fatalf("with %s: %+v, %v, %v", p, h, uploaded, err)
		}
		sameContent(t, p, h.path())
	}
}

// buildCLI builds the real binary: the test binary cannot serve
// `kandev-exec helper`.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kandev-exec")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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

// runHelperOp runs one helper request on the host, the way launches do.
func runHelperOp(t *testing.T, c *ssh.Client, helper remoteHelper, op string, req, res any) error {
	t.Helper()
	return callHelperOp(context.Background(), c, "test host", helper, op, req, res)
}

// The uploaded helper prepares a task directory on the host from JSON on
// stdin, and runs a script with a secret that only reaches it there.
func TestHelperEndToEnd(t *testing.T) {
	f := newUploadFixture(t)
	useLocalBinary(t, buildCLI(t))
	c := f.dial(t)
	helper, uploaded, err := f.exec.EnsureHelper(context.Background(), c, f.root, localPlatform)
	if err != nil || !uploaded {
		t.Fatalf("EnsureHelper = %+v, %v, %v", helper, uploaded, err)
	}
	bare, head := gitRepo(t)
	req := taskdir.PrepareRequest{
		Root:         f.root,
		TaskDir:      "fix-flaky-test",
		Owner:        taskdir.Owner{InstallationID: "inst", TaskID: "task-1", OperationID: "op-1"},
		Repositories: []taskdir.Repository{{Name: "app", URL: bare}},
		TaskBranch:   "kandev/fix-flaky-test",
		BaseBranch:   "main",
	}
	var res taskdir.PrepareResult
	if err := runHelperOp(t, c, helper, hostops.OpPrepare, req, &res); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, "tasks", "fix-flaky-test")
	if res.TaskDirAbs != dir || res.Head != head || res.Branch != req.TaskBranch || !res.Created {
		t.Fatalf("prepare = %+v", res)
	}

	req.Owner.TaskID = "task-2"
	err = runHelperOp(t, c, helper, hostops.OpPrepare, req, &res)
	var he *RemoteError
	if !errors.As(err, &he) || he.Code != taskdir.CodeOwnerMismatch {
		t.Fatalf("other task's prepare: %v", err)
	}

	var run taskdir.RunScriptResult
	script := taskdir.RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: `echo "using $TOKEN in $(pwd)"; exit 3`,
		Env: map[string]string{"TOKEN": "hunter2"}, Redact: []string{"hunter2"}}
	if err := runHelperOp(t, c, helper, hostops.OpRunScript, script, &run); err != nil {
		t.Fatal(err)
	}
	if run.ExitCode != 3 || run.OutputTail != "using *** in "+dir+"\n" {
		t.Fatalf("run-script = %+v", run)
	}
}
