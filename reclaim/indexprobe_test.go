package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitProcesses proves t-1 of root alone and counts its git processes.
func gitProcesses(t *testing.T, root string) (Result, int64) {
	t.Helper()
	rep, err := Prove(context.Background(), Request{Targets: []Target{target(root, "t-1", "task-1")}, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Results[0], rep.GitProcesses
}

// Regression: an index the reader is not sure of is listed by `git
// ls-files`, as before the reader (one git process more), and the
// verdict is git's.
func TestProveIndexNotReadAsksGit(t *testing.T) {
	for name, mutate := range map[string]func(t *testing.T, dir string){
		"core.sparseCheckout in config.worktree": func(t *testing.T, dir string) {
			gitT(t, dir, "config", "extensions.worktreeConfig", "true")
			gitT(t, dir, "config", "--worktree", "core.sparseCheckout", "true")
		},
		"split index": func(t *testing.T, dir string) { gitT(t, dir, "update-index", "--split-index") },
		"sparse-checkout patterns": func(t *testing.T, dir string) {
			gitT(t, dir, "sparse-checkout", "set", "--no-cone", "/*")
		},
		"index a symlink": func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "index")
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("index.real", p); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			bare, _ := origin(t)
			root := newRoot(t)
			dir := prepared(t, root, "t-1", "task-1", bare)
			r, read := gitProcesses(t, root)
			wantResult(t, r, Remove, "", "")
			mutate(t, dir)
			r, asked := gitProcesses(t, root)
			wantResult(t, r, Remove, "", "")
			// Clean, the checkout's status is read from its files; here
			// git status runs, and git ls-files lists the index.
			if asked != read+2 {
				t.Fatalf("%d git processes, want %d (the %d of a checkout read from its files, git status and git ls-files)", asked, read+2, read)
			}
		})
	}
}

// corruptIndex leaves the index of the checkout at dir as git refuses to
// read it: empty (a write cut short before its first byte), or of a
// version git does not know.
func corruptIndex(t *testing.T, dir string, empty bool) {
	t.Helper()
	p := filepath.Join(dir, ".git", "index")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if empty {
		b = nil
	} else {
		b[7] = 5
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Regression: a corrupt index is never taken for an empty one. The
// reader leaves it to git ls-files, which fails, and so does the proof.
func TestIndexEntriesCorruptIndexFails(t *testing.T) {
	for name, empty := range map[string]bool{"empty file": true, "unknown version": false} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			gitT(t, dir, "init", "--quiet")
			setupFlags(t, dir)
			corruptIndex(t, dir, empty)
			g, _ := findGitDir(dir)
			cfg, _ := g.config()
			h := newHost(30)
			idx, err := h.indexEntries(context.Background(), newRepo(dir, g, cfg), cfg, "")
			// Git's failure, and why the reader left it to git.
			want := regexp.MustCompile(`(?s)^git ls-files .*\(the index was left to git: (index shorter than its header|index header 4449524300000005)\)$`)
			if err == nil || !want.MatchString(err.Error()) {
				t.Fatalf("entries %v, error %v; want git ls-files' failure and the reader's reason", idx, err)
			}
			if n := h.gitRuns.Load(); n != 1 {
				t.Fatalf("%d git processes, want the one git ls-files", n)
			}
		})
	}
}

// Regression: the directory with a corrupt index is kept, unknown.
func TestApplyCorruptIndexKept(t *testing.T) {
	keptFor(t, ProbeFailed, "index file", func(t *testing.T, dir, _, _ string) { corruptIndex(t, dir, true) })
}

// Regression: an index whose checksum does not match (a write cut short,
// or an edit) keeps the directory, unknown, without asking git, which
// does not check the checksum and may read a file cut short as whatever its
// bytes say.
func TestApplyIndexChecksumMismatchKept(t *testing.T) {
	for _, c := range []struct {
		name   string
		sparse bool // sparse checkout on, which leaves a sound index to git
		mutate func(b []byte) []byte
	}{
		{"trailer flipped", false, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"cut short", false, func(b []byte) []byte { return b[:len(b)-7] }},
		{"cut short, sparse checkout on", true, func(b []byte) []byte { return b[:len(b)-7] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			bare, _ := origin(t)
			root := newRoot(t)
			dir := prepared(t, root, "t-1", "task-1", bare)
			if c.sparse {
				gitT(t, dir, "config", "core.sparseCheckout", "true")
			}
			indexPath := filepath.Join(dir, ".git", "index")
			b, err := os.ReadFile(indexPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(indexPath, c.mutate(b), 0o644); err != nil {
				t.Fatal(err)
			}
			r, runs := gitProcesses(t, root)
			wantResult(t, r, Skip, "", ProbeFailed)
			for _, w := range []string{indexPath + " does not match its checksum", "see git -C " + dir + " status"} {
				if !strings.Contains(r.Detail, w) {
					t.Fatalf("detail %q does not name %q", r.Detail, w)
				}
			}
			if runs != 1 {
				t.Fatalf("%d git processes, want the one git status", runs)
			}
			before := snapshot(t, root)
			wantResult(t, apply(t, plainT1(root, bare))[0], Skip, Skipped, ProbeFailed)
			onlyRemoved(t, before, snapshot(t, root), "")
		})
	}
}

// The flags that hide an edit from git status are read in every index
// version, and the edit keeps the directory.
func TestApplyIndexFlagsHideEditsEveryVersion(t *testing.T) {
	for _, v := range []string{"2", "4"} {
		for _, flag := range []string{"skip-worktree", "assume-unchanged"} {
			t.Run(flag+" v"+v, func(t *testing.T) {
				keptFor(t, HiddenChanges, "README (marked "+flag+", and differs from the index)", func(t *testing.T, dir, _, _ string) {
					gitT(t, dir, "update-index", "--index-version", v)
					gitT(t, dir, "update-index", "--"+flag, "README")
					writeFile(t, filepath.Join(dir, "README"), "edited\n")
				})
			})
		}
	}
}
