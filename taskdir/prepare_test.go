package taskdir

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gitT runs git for test setup, with an identity so commits work anywhere.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// bareRepo makes a bare repository whose main has one commit holding
// file; it returns its path and a work clone that can push to it.
func bareRepo(t *testing.T, file string) (bare, work string) {
	t.Helper()
	dir := t.TempDir()
	bare, work = filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	gitT(t, dir, "init", "--quiet", "--bare", bare)
	gitT(t, dir, "clone", "--quiet", bare, work)
	if err := os.WriteFile(filepath.Join(work, file), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, work, "add", file)
	gitT(t, work, "commit", "--quiet", "-m", "initial")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	return bare, work
}

func prepareReq(root, url string) PrepareRequest {
	return PrepareRequest{
		Root:    root,
		TaskDir: "t-1",
		Owner: Owner{InstallationID: "inst", TaskID: "task-1", OperationID: "op-1",
			Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		Repositories: []Repository{{Name: "app", URL: url}},
		TaskBranch:   "kandev/task-1",
		BaseBranch:   "main",
	}
}

func mustPrepare(t *testing.T, req PrepareRequest) *PrepareResult {
	t.Helper()
	res, err := Prepare(context.Background(), req)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return res
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func excludeCount(t *testing.T, dir, line string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == line {
			n++
		}
	}
	return n
}

func TestPrepareFresh(t *testing.T) {
	bare, work := bareRepo(t, "README")
	root := t.TempDir()
	res := mustPrepare(t, prepareReq(root, bare))
	dir := filepath.Join(root, "tasks", "t-1")
	if res.TaskDirAbs != dir || !res.Created || res.Branch != "kandev/task-1" || res.Owner.OperationID != "op-1" {
		t.Fatalf("result = %+v", res)
	}
	if want := gitT(t, work, "rev-parse", "HEAD"); res.Head != want {
		t.Fatalf("head = %s, want origin main %s", res.Head, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(root, "tasks"): 0o700, dir: 0o700, filepath.Join(dir, ".kandev"): 0o700,
		filepath.Join(dir, ".kandev", "owner.json"): 0o600,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("mode of %s = %v, want %v", path, got, want)
		}
	}
	if n := excludeCount(t, dir, ".kandev/"); n != 1 {
		t.Fatalf(".kandev/ appears %d times in info/exclude", n)
	}
	if st := gitT(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("status not clean: %q", st)
	}
	// The task branch must not track the base: a push must never land on main.
	if up, err := exec.Command("git", "-C", dir, "rev-parse", "--abbrev-ref", "@{upstream}").CombinedOutput(); err == nil {
		t.Fatalf("task branch tracks %s", up)
	}
}

func TestPrepareDefaultBranchFromOrigin(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	req := prepareReq(t.TempDir(), bare)
	req.BaseBranch = ""
	if res := mustPrepare(t, req); res.Branch != "kandev/task-1" {
		t.Fatalf("result = %+v", res)
	}
	req.BaseBranch, req.TaskDir = "nope", "t-2"
	_, err := Prepare(context.Background(), req)
	wantCode(t, err, CodeGitFailed)
	if !strings.Contains(err.Error(), `branch "nope" not found on origin`) {
		t.Fatalf("error = %v", err)
	}
}

// A later session of the same task keeps local commits and untracked
// work, and does not move the task branch to a newer origin main.
func TestPrepareAgainKeepsLocalWork(t *testing.T) {
	bare, work := bareRepo(t, "README")
	root := t.TempDir()
	first := mustPrepare(t, prepareReq(root, bare))
	dir := first.TaskDirAbs
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "commit", "--quiet", "-am", "local work")
	local := gitT(t, dir, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("untracked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "NEW"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, work, "add", "NEW")
	gitT(t, work, "commit", "--quiet", "-m", "upstream moves on")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")

	req := prepareReq(root, bare)
	req.Owner.OperationID, req.Owner.Created = "op-2", time.Now()
	again := mustPrepare(t, req)
	if again.Created || again.Head != local || again.Owner != first.Owner {
		t.Fatalf("second prepare = %+v, want head %s and first owner %+v", again, local, first.Owner)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "untracked\n" {
		t.Fatalf("untracked file: %q, %v", b, err)
	}
	if got := gitT(t, dir, "rev-parse", "origin/main"); got != gitT(t, work, "rev-parse", "HEAD") {
		t.Fatalf("origin/main not fetched: %s", got)
	}
	if n := excludeCount(t, dir, ".kandev/"); n != 1 {
		t.Fatalf(".kandev/ appears %d times in info/exclude", n)
	}
}

func TestPrepareOriginMismatch(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	other, _ := bareRepo(t, "OTHER")
	root := t.TempDir()
	mustPrepare(t, prepareReq(root, bare))
	_, err := Prepare(context.Background(), prepareReq(root, other))
	wantCode(t, err, CodeOriginMismatch)
}

func TestPrepareOwnerMismatch(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	mustPrepare(t, prepareReq(root, bare))
	req := prepareReq(root, bare)
	req.Owner.TaskID = "task-2"
	_, err := Prepare(context.Background(), req)
	wantCode(t, err, CodeOwnerMismatch)

	// A directory nobody claimed that already holds something is not ours.
	stranger := filepath.Join(root, "tasks", "t-9")
	if err := os.MkdirAll(filepath.Join(stranger, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	req = prepareReq(root, bare)
	req.TaskDir = "t-9"
	_, err = Prepare(context.Background(), req)
	wantCode(t, err, CodeOwnerMismatch)
	if _, err := os.Lstat(filepath.Join(stranger, ".kandev")); err == nil {
		t.Fatal("refused directory was written to")
	}
}

func TestPrepareRefusesSymlinks(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	elsewhere := t.TempDir()
	for name, setup := range map[string]func(root string) error{
		"tasks": func(root string) error { return os.Symlink(elsewhere, filepath.Join(root, "tasks")) },
		"task dir": func(root string) error {
			if err := os.Mkdir(filepath.Join(root, "tasks"), 0o700); err != nil {
				return err
			}
			return os.Symlink(elsewhere, filepath.Join(root, "tasks", "t-1"))
		},
		".kandev": func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "tasks", "t-1"), 0o700); err != nil {
				return err
			}
			return os.Symlink(elsewhere, filepath.Join(root, "tasks", "t-1", ".kandev"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := setup(root); err != nil {
				t.Fatal(err)
			}
			_, err := Prepare(context.Background(), prepareReq(root, bare))
			wantCode(t, err, CodeUnsafePath)
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Fatalf("wrote through the symlink: %v", entries)
			}
		})
	}
}

// Regression: without repositories (a profile whose prepare
// script fills the directory) the task directory is made and claimed,
// and nothing is checked out.
func TestPrepareWithoutRepositories(t *testing.T) {
	root := t.TempDir()
	req := prepareReq(root, "/nonexistent.git")
	req.Repositories = nil
	res := mustPrepare(t, req)
	dir := filepath.Join(root, "tasks", "t-1")
	if res.TaskDirAbs != dir || !res.Created || res.Head != "" || res.Branch != "" || res.Owner.TaskID != req.Owner.TaskID {
		t.Fatalf("result = %+v", res)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != ".kandev" {
		t.Fatalf("task dir holds %v, %v; want only .kandev", entries, err)
	}
	if got := mode(t, filepath.Join(dir, ".kandev", "owner.json")); got != 0o600 {
		t.Errorf("owner.json mode %v", got)
	}
	// Again (a resume): the same directory, still ours.
	if again := mustPrepare(t, req); again.Created || again.TaskDirAbs != dir {
		t.Fatalf("again: %+v", again)
	}
}

func TestPrepareRefusesBadRequests(t *testing.T) {
	root := t.TempDir()
	for name, edit := range map[string]func(*PrepareRequest){
		"empty task dir":     func(r *PrepareRequest) { r.TaskDir = "" },
		"upper case":         func(r *PrepareRequest) { r.TaskDir = "Task" },
		"dot dot":            func(r *PrepareRequest) { r.TaskDir = ".." },
		"hidden":             func(r *PrepareRequest) { r.TaskDir = ".x" },
		"two segments":       func(r *PrepareRequest) { r.TaskDir = "a/b" },
		"leading dash":       func(r *PrepareRequest) { r.TaskDir = "-a" },
		"65 bytes":           func(r *PrepareRequest) { r.TaskDir = strings.Repeat("a", 65) },
		"relative root":      func(r *PrepareRequest) { r.Root = "kandev" },
		"option as url":      func(r *PrepareRequest) { r.Repositories[0].URL = "--upload-pack=x" },
		"bad branch":         func(r *PrepareRequest) { r.TaskBranch = "a..b" },
		"no task id":         func(r *PrepareRequest) { r.Owner.TaskID = "" },
		"hidden extra repo":  func(r *PrepareRequest) { r.Repositories = append(r.Repositories, Repository{Name: ".git", URL: "x"}) },
		"nested extra repo":  func(r *PrepareRequest) { r.Repositories = append(r.Repositories, Repository{Name: "a/b", URL: "x"}) },
		"duplicate children": func(r *PrepareRequest) { r.Repositories = append(r.Repositories, r.Repositories[0], r.Repositories[0]) },
	} {
		t.Run(name, func(t *testing.T) {
			req := prepareReq(root, "/nonexistent.git")
			edit(&req)
			_, err := Prepare(context.Background(), req)
			wantCode(t, err, CodeBadRequest)
		})
	}
	if _, err := os.Lstat(filepath.Join(root, "tasks")); err == nil {
		t.Fatal("a refused request created the tasks directory")
	}
}

func TestPrepareExtraRepository(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	lib, libWork := bareRepo(t, "LIB")
	req := prepareReq(t.TempDir(), bare)
	req.Repositories = append(req.Repositories, Repository{Name: "lib", URL: lib})
	res := mustPrepare(t, req)
	child := filepath.Join(res.TaskDirAbs, "lib")
	if _, err := os.Stat(filepath.Join(child, "LIB")); err != nil {
		t.Fatal(err)
	}
	if b := gitT(t, child, "symbolic-ref", "--short", "HEAD"); b != "kandev/task-1" {
		t.Fatalf("child branch = %s", b)
	}
	if h := gitT(t, child, "rev-parse", "HEAD"); h != gitT(t, libWork, "rev-parse", "HEAD") {
		t.Fatalf("child head = %s", h)
	}
	if top := gitT(t, child, "rev-parse", "--show-toplevel"); top != child {
		t.Fatalf("child top level = %s", top)
	}
	if st := gitT(t, res.TaskDirAbs, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("primary not clean with a child checkout: %q", st)
	}
	mustPrepare(t, req) // and again, idempotently
}

// A fetch that hangs ends at the request's timeout, and the process
// group dies with it.
func TestPrepareTimeoutKillsGit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	operatorSSH(t, pidFile)
	bare, _ := bareRepo(t, "README")
	req := prepareReq(t.TempDir(), "somehost:"+bare)
	mustPrepare(t, req)
	if err := os.WriteFile(pidFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req.TimeoutSeconds = 1
	_, err := Prepare(context.Background(), req)
	wantCode(t, err, CodeTimeout)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitDead(t, pid)
}
