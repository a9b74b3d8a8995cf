package reclaim

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forgeStat rewrites the index entry of name in the checkout at dir to
// the file's own stat data (then edit's changes), and dates the index
// after it: what a hand-written index, or a racy refresh, leaves.
func forgeStat(t *testing.T, dir, name string, edit func(b []byte, at int)) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, ".git", "index")
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(name+"\x00")) - (ceStatLen + 20 + 2)
	if at < indexHeaderLen {
		t.Fatalf("%s is not in the index", name)
	}
	be := binary.BigEndian
	for off, v := range map[int]uint32{0: uint32(st.Ctim.Sec), 4: uint32(st.Ctim.Nsec), 8: uint32(st.Mtim.Sec),
		12: uint32(st.Mtim.Nsec), 20: uint32(st.Ino), 28: st.Uid, 32: st.Gid, 36: uint32(st.Size)} {
		be.PutUint32(b[at+off:], v)
	}
	edit(b, at)
	sum := sha1.Sum(b[:len(b)-sha1.Size])
	copy(b[len(b)-sha1.Size:], sum[:])
	if err := os.WriteFile(index, b, 0o644); err != nil {
		t.Fatal(err)
	}
	aged(t, dir)
}

// provesDirty: the files leave the checkout to git, which finds reason.
func provesDirty(t *testing.T, dir string, reason Reason) {
	t.Helper()
	if _, clean := readFromFiles(t, dir, true); clean {
		t.Fatal("read from the files as clean")
	}
	wantResult(t, prove(t, target(filepath.Dir(filepath.Dir(dir)), "t-1", "task-1"))[0], Skip, "", reason)
}

// Regression: an entry recorded with size 0 is one git found racily
// clean, and compares by content; a file emptied since is a change.
func TestCleanFromFilesComparesAnEntryRecordedEmpty(t *testing.T) {
	bare, _ := origin(t)
	dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
	p, then := filepath.Join(dir, "README"), time.Now().Add(-time.Hour)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, then, then)
	forgeStat(t, dir, "README", func([]byte, int) {})
	provesDirty(t, dir, DirtyWorktree)
}

// Regression: git compares the owner too, and reads the file where it
// differs.
func TestCleanFromFilesComparesTheOwner(t *testing.T) {
	bare, _ := origin(t)
	dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
	writeFile(t, filepath.Join(dir, "README"), "HELLO\n")
	forgeStat(t, dir, "README", func(b []byte, at int) { binary.BigEndian.PutUint32(b[at+28:], 4242) })
	provesDirty(t, dir, DirtyWorktree)
}

// Regression: git reports an ignored directory even when it is empty.
func TestCleanFromFilesLeavesAnEmptyIgnoredDirectoryToGit(t *testing.T) {
	bare, _ := origin(t)
	dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
	exclude := filepath.Join(dir, ".git", "info", "exclude")
	b, err := os.ReadFile(exclude)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, exclude, string(b)+"build/\n")
	if err := os.Mkdir(filepath.Join(dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	provesDirty(t, dir, IgnoredFiles)
}

// unpushedBranch commits work.txt on HEAD's branch (never pushed) and
// puts the index and files back to the pushed commit: HEAD's branch
// holds the work, the checkout is the pushed tree. It returns the two.
func unpushedBranch(t *testing.T, dir string) (pushed, work string) {
	t.Helper()
	pushed = gitT(t, dir, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(dir, "work.txt"), "precious\n")
	gitT(t, dir, "add", "work.txt")
	gitT(t, dir, "commit", "-q", "-m", "unpushed work")
	work = gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "read-tree", pushed)
	if err := os.Remove(filepath.Join(dir, "work.txt")); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "update-index", "--refresh")
	os.RemoveAll(filepath.Join(dir, ".git", "logs"))
	return pushed, work
}

// asLinkedGitdir moves the checkout's repository to .git/repo and makes
// .git a worktree's own gitdir sharing it (commondir), as a linked
// worktree's is.
func asLinkedGitdir(t *testing.T, dir string) string {
	t.Helper()
	g := filepath.Join(dir, ".git")
	tmp := filepath.Join(filepath.Dir(dir), "moving")
	for _, mv := range [][2]string{{g, tmp}, {tmp, filepath.Join(g, "repo")},
		{filepath.Join(g, "repo", "index"), filepath.Join(g, "index")}, {filepath.Join(g, "repo", "HEAD"), filepath.Join(g, "HEAD")}} {
		if mv[0] == tmp {
			if err := os.Mkdir(g, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(g, "commondir"), "repo\n")
	return g
}

// Regression: the refs the proof reads are the ones git reads, HEAD's
// branch and every other: a branch file in a worktree's own gitdir is
// not the branch, a symbolic loose ref hides the packed one of its name,
// and a packed ref listed twice names two commits.
func TestProveReadsRefsAsGitDoes(t *testing.T) {
	bare, _ := origin(t)
	for _, c := range []struct {
		name   string
		mutate func(t *testing.T, dir string)
		reason Reason
	}{
		{"HEAD's branch as a ref naming another, over the packed one", func(t *testing.T, dir string) {
			branch := gitT(t, dir, "symbolic-ref", "HEAD")
			pushed, work := unpushedBranch(t, dir)
			gitT(t, dir, "update-ref", branch, pushed)
			gitT(t, dir, "pack-refs", "--all")
			writeFile(t, filepath.Join(dir, ".git", "MYREF"), work+"\n")
			writeFile(t, filepath.Join(dir, ".git", branch), "ref: MYREF\n")
			os.RemoveAll(filepath.Join(dir, ".git", "logs"))
		}, ProbeFailed},
		{"HEAD's branch shadowed in a worktree's own gitdir", func(t *testing.T, dir string) {
			branch := gitT(t, dir, "symbolic-ref", "HEAD")
			pushed, _ := unpushedBranch(t, dir)
			writeFile(t, filepath.Join(asLinkedGitdir(t, dir), branch), pushed+"\n")
		}, DirtyWorktree}, // git's HEAD holds work.txt, which the checkout lacks
		{"another branch shadowed in a worktree's own gitdir", func(t *testing.T, dir string) {
			pushed := gitT(t, dir, "rev-parse", "HEAD")
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "unpushed on feature")
			gitT(t, dir, "branch", "feature")
			gitT(t, dir, "reset", "-q", "--hard", pushed)
			os.RemoveAll(filepath.Join(dir, ".git", "logs"))
			os.Remove(filepath.Join(dir, ".git", "ORIG_HEAD"))
			writeFile(t, filepath.Join(asLinkedGitdir(t, dir), "refs", "heads", "feature"), pushed+"\n")
		}, UnpushedCommits},
		{"another branch naming a ref outside refs/", func(t *testing.T, dir string) {
			pushed := gitT(t, dir, "rev-parse", "HEAD")
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "unpushed on feature")
			work := gitT(t, dir, "rev-parse", "HEAD")
			gitT(t, dir, "reset", "-q", "--hard", pushed)
			os.RemoveAll(filepath.Join(dir, ".git", "logs"))
			os.Remove(filepath.Join(dir, ".git", "ORIG_HEAD"))
			writeFile(t, filepath.Join(dir, ".git", "MYREF"), work+"\n")
			writeFile(t, filepath.Join(dir, ".git", "refs", "heads", "feature"), "ref: MYREF\n")
		}, ProbeFailed},
		{"a packed ref listed twice", func(t *testing.T, dir string) {
			branch := gitT(t, dir, "symbolic-ref", "HEAD")
			pushed, work := unpushedBranch(t, dir)
			gitT(t, dir, "pack-refs", "--all")
			p := filepath.Join(dir, ".git", "packed-refs")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			line := work + " " + branch + "\n"
			if !strings.Contains(string(b), line) {
				t.Fatalf("packed-refs has no %q:\n%s", line, b)
			}
			writeFile(t, p, strings.Replace(string(b), line, line+pushed+" "+branch+"\n", 1))
		}, ProbeFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
			c.mutate(t, dir)
			aged(t, dir)
			wantResult(t, prove(t, target(filepath.Dir(filepath.Dir(dir)), "t-1", "task-1"))[0], Skip, "", c.reason)
		})
	}
}
