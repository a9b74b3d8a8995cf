package reclaim

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"github.com/kdlbs/kandev-exec/taskdir"
)

const testInstallation = "inst-1"

// requireRoot fails (never skips) a test that needs root: another user's
// files (uid 65534), bind mounts. CI runs the suite as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("this test must run as root (it makes files owned by uid 65534 or bind-mounts); run `go test ./reclaim/` as root, as CI does")
	}
}

// gitT runs git for test setup, with an identity so commits work.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// origin makes a bare repository whose main has one commit, and a work
// clone that can push to it.
func origin(t *testing.T) (bare, work string) {
	t.Helper()
	dir := physical(t, t.TempDir())
	bare, work = filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	gitT(t, dir, "init", "--quiet", "--bare", bare)
	gitT(t, dir, "clone", "--quiet", bare, work)
	writeFile(t, filepath.Join(work, "README"), "hello\n")
	gitT(t, work, "add", "README")
	gitT(t, work, "commit", "--quiet", "-m", "initial")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	return bare, work
}

func physical(t *testing.T, p string) string {
	t.Helper()
	phys, err := fsx.Physical(p)
	if err != nil {
		t.Fatal(err)
	}
	return phys
}

// newRoot makes a workdir root the way the bootstrap does (0700).
func newRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(physical(t, t.TempDir()), "kandev")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

// prepared makes <root>/tasks/<dir> for task with taskdir.Prepare, the
// way a launch does: a checkout of url on kandev/<task>, with its marker.
func prepared(t *testing.T, root, dir, task, url string) string {
	t.Helper()
	res, err := taskdir.Prepare(context.Background(), taskdir.PrepareRequest{
		Root:    root,
		TaskDir: dir,
		Owner: taskdir.Owner{InstallationID: testInstallation, TaskID: task, OperationID: "op-" + task,
			Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		Repositories: []taskdir.Repository{{URL: url}},
		TaskBranch:   "kandev/" + task,
		BaseBranch:   "main",
	})
	if err != nil {
		t.Fatalf("prepare %s: %v", dir, err)
	}
	return res.TaskDirAbs
}

// repoOf is the gitdir and configuration of the checkout at dir, as the
// proof reads them.
func repoOf(t testing.TB, dir string) (gitDir, gitsafe.Config) {
	t.Helper()
	g, err := findGitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := g.config()
	if err != nil {
		t.Fatal(err)
	}
	return g, cfg
}

func target(root, dir, task string) Target {
	return Target{Root: root, Dir: dir, InstallationID: testInstallation, TaskID: task, Enabled: true}
}

// candidate is a plan's row as Apply's target, the way the executor sends
// it: with the identity the plan saw, so a directory swapped in since is
// kept.
func candidate(root string, r Row) Target {
	tg := target(root, r.Dir, r.TaskID)
	tg.Identity = r.Identity
	return tg
}

func prove(t *testing.T, targets ...Target) []Result {
	t.Helper()
	rep, err := Prove(context.Background(), Request{Targets: targets, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatalf("prove: %v", err)
	}
	return rep.Results
}

func apply(t *testing.T, targets ...Target) []Result {
	t.Helper()
	rep, err := Apply(context.Background(), Request{Targets: targets, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return rep.Results
}

// snapshot lists every path under dirs (links as themselves, never
// followed), so a test can show what a call removed, and nothing else.
func snapshot(t *testing.T, dirs ...string) map[string]bool {
	t.Helper()
	s := map[string]bool{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			s[p] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// onlyRemoved asserts that after differs from before by exactly the
// paths at and below gone (none when gone is ""), and gained nothing.
func onlyRemoved(t *testing.T, before, after map[string]bool, gone string) {
	t.Helper()
	for p := range before {
		under := gone != "" && (p == gone || strings.HasPrefix(p, gone+"/"))
		switch {
		case under && after[p]:
			t.Errorf("%s should have been removed", p)
		case !under && !after[p]:
			t.Errorf("%s was removed outside the proof", p)
		}
	}
	for p := range after {
		if !before[p] {
			t.Errorf("%s appeared", p)
		}
	}
}

func wantResult(t *testing.T, r Result, action Action, outcome Outcome, reason Reason) {
	t.Helper()
	if r.Action != action || r.Outcome != outcome || r.Reason != reason {
		t.Fatalf("result = %s/%s/%s (%s), want %s/%s/%s", r.Action, r.Outcome, r.Reason, r.Detail, action, outcome, reason)
	}
}

func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	return cmd
}
