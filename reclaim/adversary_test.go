package reclaim

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// More ways an agent, or a careless user, can leave a checkout that
// looks clean: each is kept with its reason, or, where nothing is at
// risk, removed leaving what lies outside it.

// Every submodule path never initialised, wherever it is, hides what is
// written there: here the second of two, nested, and a link.
func TestApplyEveryUninitialisedSubmodulePath(t *testing.T) {
	for name, write := range map[string]func(t *testing.T, p string){
		"file": func(t *testing.T, p string) { writeFile(t, p, "only here\n") },
		"link": func(t *testing.T, p string) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../README", p); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			keptFor(t, HiddenChanges, "vendor/tools/notes (in submodule path vendor/tools, which has no repository)", func(t *testing.T, dir, _, work string) {
				submoduleOrigin(t, work)
				toolsBare, _ := origin(t)
				gitT(t, work, "submodule", "--quiet", "add", toolsBare, "vendor/tools")
				gitT(t, work, "commit", "--quiet", "-m", "add tools")
				gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
				gitT(t, dir, "pull", "--quiet", "--ff-only", "origin", "main")
				write(t, filepath.Join(dir, "vendor", "tools", "notes"))
				if out := gitT(t, dir, "status", "--porcelain", "--untracked-files=all"); out != "" {
					t.Fatalf("fixture: git status sees %q", out)
				}
			})
		})
	}
}

// dropReflogs removes every reflog, as `core.logAllRefUpdates=false` and
// a cleanup would leave a repository.
func dropReflogs(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, ".git", "logs")); err != nil {
		t.Fatal(err)
	}
}

// A commit kept only by a file of the gitdir's top (ORIG_HEAD after a
// reset, FETCH_HEAD after a fetch from a repository since removed), with
// no reflog to hold it, is work the upstream lacks.
func TestApplyCommitOnlyInPseudoRef(t *testing.T) {
	t.Run("ORIG_HEAD", func(t *testing.T) {
		keptFor(t, UnpushedCommits, `"ORIG_HEAD"`, func(t *testing.T, dir, _, _ string) {
			commit(t, dir, "work.txt", "agent work")
			gitT(t, dir, "reset", "--quiet", "--hard", "HEAD~1")
			dropReflogs(t, dir)
		})
	})
	t.Run("FETCH_HEAD", func(t *testing.T) {
		keptFor(t, UnpushedCommits, `"FETCH_HEAD"`, func(t *testing.T, dir, _, _ string) {
			scratch := filepath.Join(t.TempDir(), "scratch")
			gitT(t, dir, "clone", "--quiet", dir, scratch)
			commit(t, scratch, "work.txt", "agent work")
			gitT(t, dir, "fetch", "--quiet", scratch, "HEAD")
			if err := os.RemoveAll(scratch); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// A branch only in packed-refs, with no reflog.
func TestApplyPackedRefOnly(t *testing.T) {
	keptFor(t, UnpushedCommits, "refs/heads/side", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "checkout", "--quiet", "-b", "side")
		commit(t, dir, "side.txt", "side work")
		gitT(t, dir, "checkout", "--quiet", "kandev/task-1")
		gitT(t, dir, "pack-refs", "--all")
		dropReflogs(t, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git", "refs", "heads", "side")); !os.IsNotExist(err) {
			t.Fatalf("fixture: side is still a loose ref: %v", err)
		}
	})
}

// The helper's own environment (the login shell's) naming another
// repository, work tree or index does not redirect the probes.
func TestApplyIgnoresGitEnvironment(t *testing.T) {
	keptFor(t, UntrackedFiles, "scratch.txt", func(t *testing.T, dir, bare, _ string) {
		other := filepath.Join(physical(t, t.TempDir()), "other")
		gitT(t, filepath.Dir(other), "clone", "--quiet", bare, other)
		writeFile(t, filepath.Join(dir, "scratch.txt"), "mine\n")
		t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
		t.Setenv("GIT_WORK_TREE", other)
		t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
		t.Setenv("GIT_CONFIG_PARAMETERS", "'status.showuntrackedfiles'='no'")
	})
}

// A stash in a repository nested in the directory.
func TestApplyNestedRepositoryStash(t *testing.T) {
	keptFor(t, StashPresent, "t-1/web", func(t *testing.T, dir, bare, _ string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/web/\n")
		web := filepath.Join(dir, "web")
		gitT(t, dir, "clone", "--quiet", bare, web)
		writeFile(t, filepath.Join(web, "README"), "stashed\n")
		gitT(t, web, "stash", "--quiet")
	})
}

// A whole repository (a working clone) put under .git/modules, which no
// checkout uses: its commits would go unseen.
func TestApplyRepositoryInsideModules(t *testing.T) {
	keptFor(t, ProbeFailed, "modules/stash", func(t *testing.T, dir, bare, _ string) {
		hidden := filepath.Join(dir, ".git", "modules", "stash")
		gitT(t, dir, "clone", "--quiet", bare, hidden)
		commit(t, hidden, "work.txt", "hidden work")
	})
}

// A linked worktree added inside the directory still shares the
// repository: kept, as one outside it is.
func TestApplyLinkedWorktreeInside(t *testing.T) {
	keptFor(t, LinkedWorktree, "t-1/inner", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/inner/\n")
		gitT(t, dir, "worktree", "add", "--quiet", "--detach", "inner")
	})
}

// hostileName is a file name with a newline, a tab and bytes that are
// not UTF-8.
const hostileName = "a\nb\tc\xff\xfe.txt"

// Names git would quote or could not print are compared as bytes.
func TestApplyHostileFileNames(t *testing.T) {
	t.Run("untracked", func(t *testing.T) {
		keptFor(t, UntrackedFiles, "untracked path(s)", func(t *testing.T, dir, _, _ string) {
			writeFile(t, filepath.Join(dir, "sub", hostileName), "mine\n")
		})
	})
	t.Run("skip-worktree", func(t *testing.T) {
		keptFor(t, HiddenChanges, "marked skip-worktree, and differs from the index", func(t *testing.T, dir, _, _ string) {
			p := filepath.Join(dir, hostileName)
			writeFile(t, p, "committed\n")
			gitT(t, dir, "add", "--", hostileName)
			commit(t, dir, "other.txt", "with a hostile name")
			gitT(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/kandev/task-1")
			gitT(t, dir, "update-index", "--skip-worktree", "--", hostileName)
			writeFile(t, p, "edited\n")
			if out := gitT(t, dir, "status", "--porcelain"); out != "" {
				t.Fatalf("fixture: git status sees %q", out)
			}
		})
	})
}

// A tracked file that is a hard link to a file outside: the removal
// unlinks the name, and the file outside is as it was.
func TestApplyHardLinkOutsideSurvives(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	outside := filepath.Join(filepath.Dir(root), "kept-README")
	writeFile(t, outside, "hello\n")
	if err := os.Remove(filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
	if b, err := os.ReadFile(outside); err != nil || string(b) != "hello\n" {
		t.Fatalf("the file outside: %q, %v", b, err)
	}
}

// A .git file naming a repository elsewhere: the files here are still
// compared with it, and an untracked one keeps the directory.
func TestApplyGitFileNamingRepositoryElsewhere(t *testing.T) {
	keptFor(t, UntrackedFiles, "scratch.txt", func(t *testing.T, dir, bare, _ string) {
		other := filepath.Join(physical(t, t.TempDir()), "other.git")
		gitT(t, filepath.Dir(other), "clone", "--quiet", "--bare", bare, other)
		gitT(t, other, "config", "core.bare", "false")
		if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
			t.Fatal(err)
		}
		gitT(t, dir, "--git-dir="+other, "--work-tree="+dir, "read-tree", "HEAD")
		writeFile(t, filepath.Join(dir, ".git"), "gitdir: "+other+"\n")
		writeFile(t, filepath.Join(other, "info", "exclude"), ".kandev/\n")
		writeFile(t, filepath.Join(dir, "scratch.txt"), "mine\n")
		if !strings.Contains(gitT(t, dir, "status", "--porcelain"), "scratch.txt") {
			t.Fatal("fixture: git status does not see scratch.txt")
		}
	})
}

// An object planted under the name of the remote's tip, saying the
// unpushed commit is its parent: git does not check an object's hash when
// it walks history, so the proof checks the commits it relies on, loose
// (a copied file) or packed (an index that names it falsely).
func TestApplyForgedObjectMakesUnpushedLookPushed(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, dir, src, dst string){"loose": plantObject, "packed": plantPacked} {
		t.Run(name, func(t *testing.T) { forgedTip(t, plant) })
	}
}

func forgedTip(t *testing.T, plant func(t *testing.T, dir, src, dst string)) {
	keptFor(t, ProbeFailed, "does not hash to its name", func(t *testing.T, dir, _, work string) {
		work1 := commit(t, dir, "work.txt", "agent work")
		tip := commit(t, work, "theirs.txt", "theirs")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		// The fake: the remote tip's tree, with the agent's work as parent,
		// written where git looks first for the tip (a loose object).
		gitT(t, dir, "fetch", "--quiet", "origin")
		fake := gitT(t, dir, "commit-tree", "-p", work1, "-m", "theirs", tip+"^{tree}")
		plant(t, dir, fake, tip)
		if out := gitT(t, dir, "rev-list", "--count", work1, "^"+tip); out != "0" {
			t.Fatalf("fixture: the forged object does not hide the commit (%s)", out)
		}
	})
}

// The same under the name of the HEAD commit, the remote's tip itself
// (loose, as a small fetch leaves it, so the file is replaced): the
// forged one's tree holds a staged edit, which status then compares
// with. No object file may be other than its name says.
func TestApplyForgedHeadCommitHidesStagedEdit(t *testing.T) {
	keptFor(t, ProbeFailed, "does not hash to its name", func(t *testing.T, dir, _, _ string) {
		head := gitT(t, dir, "rev-parse", "HEAD")
		writeFile(t, filepath.Join(dir, "README"), "staged, and lost\n")
		gitT(t, dir, "add", "README")
		tree := gitT(t, dir, "write-tree")
		fake := gitT(t, dir, "commit-tree", "-m", "initial", tree)
		plantObject(t, dir, fake, head)
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Fatalf("fixture: git status sees %q", out)
		}
	})
}

// plantObject copies the loose object file of src to where git looks
// first for dst.
func plantObject(t *testing.T, dir, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "objects", src[:2], src[2:]))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".git", "objects", dst[:2], dst[2:]), string(b))
}

// plantPacked packs the object src alone, with an index that names it
// dst (git checks neither when it reads a pack), and removes its loose
// file.
func plantPacked(t *testing.T, dir, src, dst string) {
	t.Helper()
	cmd := gitCmd(dir, "pack-objects", "-q", filepath.Join(".git", "objects", "pack", "pack"))
	cmd.Stdin = strings.NewReader(src + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, ".git", "objects", "pack", "pack-"+strings.TrimSpace(string(out))+".idx")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	// Version 2, one object: header, fan-out, its name, its CRC and
	// offset, the pack's checksum, then the index's own.
	const fanout, name = 8, 8 + 256*4
	oid, err := hex.DecodeString(dst)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 256 {
		n := uint32(0)
		if i >= int(oid[0]) {
			n = 1
		}
		binary.BigEndian.PutUint32(b[fanout+4*i:], n)
	}
	copy(b[name:], oid)
	sum := sha1.Sum(b[:len(b)-20])
	copy(b[len(b)-20:], sum[:])
	if err := os.Chmod(idx, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, idx, string(b))
	if err := os.Remove(filepath.Join(dir, ".git", "objects", src[:2], src[2:])); err != nil {
		t.Fatal(err)
	}
}

// A forged loose object in a store the checkout borrows from
// (objects/info/alternates), directly or through that store's own, is
// read as its own: it is hashed too. An alternates file that cannot be
// read (a link) proves nothing.
func TestApplyForgedObjectInBorrowedStore(t *testing.T) {
	for name, c := range map[string]struct {
		reason Reason
		detail string
		nested bool
		link   bool
	}{
		"direct":          {ProbeFailed, "does not hash to its name", false, false},
		"through another": {ProbeFailed, "does not hash to its name", true, false},
		"alternates link": {ProbeFailed, "alternates", false, true},
	} {
		t.Run(name, func(t *testing.T) {
			keptFor(t, c.reason, c.detail, func(t *testing.T, dir, _, _ string) {
				head := gitT(t, dir, "rev-parse", "HEAD")
				writeFile(t, filepath.Join(dir, "README"), "staged, and lost\n")
				gitT(t, dir, "add", "README")
				fake := gitT(t, dir, "commit-tree", "-m", "initial", gitT(t, dir, "write-tree"))
				stores := physical(t, t.TempDir())
				store := filepath.Join(stores, "objects")
				b, err := os.ReadFile(filepath.Join(dir, ".git", "objects", fake[:2], fake[2:]))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(store, head[:2], head[2:]), string(b))
				alternates := filepath.Join(dir, ".git", "objects", "info", "alternates")
				switch {
				case c.nested:
					writeFile(t, filepath.Join(stores, "first", "info", "alternates"), store+"\n")
					writeFile(t, alternates, filepath.Join(stores, "first")+"\n")
				case c.link:
					writeFile(t, filepath.Join(stores, "alternates"), store+"\n")
					if err := os.Symlink(filepath.Join(stores, "alternates"), alternates); err != nil {
						t.Fatal(err)
					}
				default:
					writeFile(t, alternates, store+"\n")
				}
				// The real one (loose, as a small fetch leaves it) goes.
				if err := os.Remove(filepath.Join(dir, ".git", "objects", head[:2], head[2:])); err != nil {
					t.Fatal(err)
				}
				if out := gitT(t, dir, "status", "--porcelain"); out != "" {
					t.Fatalf("fixture: git status sees %q", out)
				}
			})
		})
	}
}
