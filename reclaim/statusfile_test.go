package reclaim

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// checkoutFiles walks the checkout at dir as a proof does and returns
// what cleanFromFiles is given of it.
func checkoutFiles(t *testing.T, dir string) []entry {
	t.Helper()
	top, err := openDirPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer top.close()
	tr, err := walkTree(top)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.checkouts) != 1 {
		t.Fatalf("%s holds checkouts %v", dir, tr.checkouts)
	}
	return filesByCheckout(tr)["."]
}

// readFromFiles is cleanFromFiles on the checkout at dir.
func readFromFiles(t *testing.T, dir string, top bool) (status, bool) {
	t.Helper()
	g, cfg := repoOf(t, dir)
	ff, ok := cleanFromFiles(dir, g, cfg, checkoutFiles(t, dir), top)
	st := ff.st
	return st, ok
}

// gitSaysClean: git status, as the proof runs it, reports nothing
// outside .kandev/.
func gitSaysClean(t *testing.T, dir string) bool {
	t.Helper()
	out := gitT(t, dir, append([]string{"-c", "core.fileMode=true"}, statusArgs...)...)
	for _, r := range strings.Split(out, "\x00") {
		if r != "" && !strings.HasPrefix(r, "#") && !strings.Contains(r, " .kandev/") && r != "! .kandev/" {
			return false
		}
	}
	return true
}

// aged moves the index file's time on, as when git wrote it a while
// after the files: no entry is then racily clean.
func aged(t *testing.T, dir string) {
	t.Helper()
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, ".git", "index"), later, later); err != nil {
		t.Fatal(err)
	}
}

// Each way a checkout differs from HEAD, or is not read the way git reads
// it, leaves its status to git; a clean one, however its files got there,
// is read from them. Whenever the files answer, git agrees.
func TestCleanFromFilesAgreesWithGit(t *testing.T) {
	bare, _ := origin(t)
	for _, c := range []struct {
		name   string
		mutate func(t *testing.T, dir string)
		clean  bool
	}{
		{"fresh checkout", func(t *testing.T, dir string) {}, true},
		{"stat data recorded", aged, true},
		{"every file touched, content the same", func(t *testing.T, dir string) {
			then := time.Now().Add(-time.Hour)
			os.Chtimes(filepath.Join(dir, "README"), then, then)
		}, true},
		{"executable and link, recorded", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\n")
			os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
			os.Symlink("README", filepath.Join(dir, "link"))
			gitT(t, dir, "add", "run.sh", "link")
			gitT(t, dir, "commit", "-q", "-m", "more")
			aged(t, dir)
		}, true},
		{"a new commit, loose", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "sub", "deep", "f"), "x\n")
			gitT(t, dir, "add", "sub")
			gitT(t, dir, "commit", "-q", "-m", "deep")
		}, true},
		{"everything packed, refs too", func(t *testing.T, dir string) {
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "e")
			gitT(t, dir, "gc", "-q")
		}, true},
		{"detached HEAD", func(t *testing.T, dir string) { gitT(t, dir, "checkout", "-q", "--detach") }, true},
		{"edited, size and mtime as recorded", func(t *testing.T, dir string) {
			// Only the change time tells: the index records the file
			// as it was, and is dated after the edit.
			p, then := filepath.Join(dir, "README"), time.Now().Add(-time.Hour)
			os.Chtimes(p, then, then)
			gitT(t, dir, "update-index", "--refresh")
			writeFile(t, p, "HELLO\n")
			os.Chtimes(p, then, then)
			aged(t, dir)
		}, false},
		{"staged change", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "README"), "changed\n")
			gitT(t, dir, "add", "README")
		}, false},
		{"staged, then the file put back", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "README")
			writeFile(t, p, "changed\n")
			gitT(t, dir, "add", "README")
			writeFile(t, p, "hello\n")
		}, false},
		{"untracked file", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "notes"), "n\n") }, false},
		{"ignored file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n.env\n")
			writeFile(t, filepath.Join(dir, ".env"), "TOKEN=x\n")
		}, false},
		{"deleted file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "README")) }, false},
		{"mode changed", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "README"), 0o755) }, false},
		{"intent to add", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "new"), "")
			gitT(t, dir, "add", "-N", "new")
		}, false},
		{"skip-worktree", func(t *testing.T, dir string) { gitT(t, dir, "update-index", "--skip-worktree", "README") }, false},
		{"assume-unchanged", func(t *testing.T, dir string) { gitT(t, dir, "update-index", "--assume-unchanged", "README") }, false},
		{"a file where the index has a link", func(t *testing.T, dir string) {
			os.Symlink("README", filepath.Join(dir, "link"))
			gitT(t, dir, "add", "link")
			gitT(t, dir, "commit", "-q", "-m", "link")
			os.Remove(filepath.Join(dir, "link"))
			writeFile(t, filepath.Join(dir, "link"), "README")
		}, false},
		{"unborn branch", func(t *testing.T, dir string) { gitT(t, dir, "checkout", "-q", "--orphan", "empty") }, false},
		{"an unknown repository extension", func(t *testing.T, dir string) {
			gitT(t, dir, "config", "core.repositoryformatversion", "1")
			gitT(t, dir, "config", "extensions.noop", "true")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
			c.mutate(t, dir)
			st, clean := readFromFiles(t, dir, true)
			if clean != c.clean {
				t.Fatalf("read from the files: clean %v, want %v", clean, c.clean)
			}
			if !clean {
				return
			}
			if !gitSaysClean(t, dir) {
				t.Fatal("the files say clean and git does not")
			}
			if head := gitT(t, dir, "rev-parse", "HEAD"); st.head != head {
				t.Fatalf("head %s, git's %s", st.head, head)
			}
		})
	}
}

// A checkout copied file by file (new inodes and change times: no stat
// data of its index holds) is clean by its content, hashed against the
// index; one byte changed, and git decides.
func TestCleanFromFilesHashesWhatStatDataDoNotVouchFor(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	seed := prepared(t, root, "seed", "task-1", bare)
	dir := filepath.Join(root, "tasks", "t-1")
	if out, err := exec.Command("cp", "-a", seed, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	aged(t, dir)
	if _, clean := readFromFiles(t, dir, true); !clean {
		t.Fatal("a copy of a clean checkout is not read as clean")
	}
	p := filepath.Join(dir, "README")
	fi, _ := os.Stat(p)
	writeFile(t, p, "hellO\n")
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if _, clean := readFromFiles(t, dir, true); clean {
		t.Fatal("an edited copy is read as clean")
	}
}

// Regression: HEAD's commit is checked against its name. Its loose
// object rewritten to name the tree of the work staged in the index would
// have that work compared with itself, and taken for committed.
func TestCleanFromFilesRefusesAForgedHeadCommit(t *testing.T) {
	bare, _ := origin(t)
	dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "loose")
	head := gitT(t, dir, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(dir, "README"), "unsaved work\n")
	gitT(t, dir, "add", "README")
	work := gitT(t, dir, "write-tree")
	content := gitT(t, dir, "cat-file", "commit", head) + "\n"
	_, rest, _ := strings.Cut(content, "\n")
	forged := "tree " + work + "\n" + rest
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	fmt.Fprintf(z, "commit %d\x00%s", len(forged), forged)
	z.Close()
	p := filepath.Join(dir, ".git", "objects", head[:2], head[2:])
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, clean := readFromFiles(t, dir, true); clean {
		t.Fatal("a forged HEAD commit is taken at its word")
	}
}

// Regression: stat data that match a file changed no earlier than the
// index was written vouch for nothing (git records a file and writes the
// index within one clock tick, and a change in that tick keeps its
// times): such a file is hashed, and an edit found.
func TestCleanFromFilesHashesRacilyCleanFiles(t *testing.T) {
	bare, _ := origin(t)
	dir := prepared(t, newRoot(t), "t-1", "task-1", bare)
	p := filepath.Join(dir, "README")
	writeFile(t, p, "HELLO\n") // the same size as what the index names
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, ".git", "index")
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("README\x00")) - (ceStatLen + 20 + 2)
	if at < indexHeaderLen {
		t.Fatal("README is not in the index")
	}
	be := binary.BigEndian
	be.PutUint32(b[at:], uint32(st.Ctim.Sec))
	be.PutUint32(b[at+4:], uint32(st.Ctim.Nsec))
	be.PutUint32(b[at+8:], uint32(st.Mtim.Sec))
	be.PutUint32(b[at+12:], uint32(st.Mtim.Nsec))
	be.PutUint32(b[at+20:], uint32(st.Ino))
	be.PutUint32(b[at+36:], uint32(st.Size))
	sum := sha1.Sum(b[:len(b)-sha1.Size])
	copy(b[len(b)-sha1.Size:], sum[:])
	if err := os.WriteFile(index, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tick := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	if err := os.Chtimes(index, tick, tick); err != nil {
		t.Fatal(err)
	}
	if _, clean := readFromFiles(t, dir, true); clean {
		t.Fatal("a racily clean edit is read as clean")
	}
}
