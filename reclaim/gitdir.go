package reclaim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// What the probes read from a gitdir directly instead of running git for
// it: a thousand checkouts should cost a thousand git processes, not
// several thousand. Anything unexpected is an error, which keeps the
// directory.

// gitDir is where a checkout's repository lives: dir is its own gitdir
// (per worktree), common the shared one holding refs, config, worktrees/
// and modules/.
type gitDir struct {
	dir, common string
}

// maxGitFile bounds what is read from one gitdir file (packed-refs of a
// repository with many tags is the large one).
const maxGitFile = 64 << 20

// oidRE is a SHA-1 or SHA-256 object id, in lower-case hex.
var oidRE = ascii.Word{First: ascii.LowerHex, Rest: ascii.LowerHex, Lens: []int{40, 64}}

// findGitDir resolves checkout's .git: a directory, or a file naming the
// gitdir (submodules, linked worktrees), with a commondir when shared.
func findGitDir(checkout string) (gitDir, error) {
	dotgit := filepath.Join(checkout, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return gitDir{}, err
	}
	var g gitDir
	switch {
	case fi.IsDir():
		g.dir = dotgit
	case fi.Mode().IsRegular():
		b, err := readSmallFile(dotgit)
		if err != nil {
			return gitDir{}, err
		}
		target, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !ok || target == "" {
			return gitDir{}, fmt.Errorf("%s is not a gitdir file", dotgit)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(checkout, target)
		}
		g.dir = filepath.Clean(target)
	default:
		return gitDir{}, fmt.Errorf("%s is neither a directory nor a gitdir file (mode %s)", dotgit, fi.Mode())
	}
	g.common = g.dir
	switch b, err := readSmallFile(filepath.Join(g.dir, "commondir")); {
	case err == nil:
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(g.dir, c)
		}
		g.common = filepath.Clean(c)
	case !errors.Is(err, fs.ErrNotExist):
		return gitDir{}, err
	}
	return g, nil
}

// readSmallFile reads a small regular file without following a link or
// blocking on a FIFO planted in its place.
func readSmallFile(path string) ([]byte, error) {
	b, _, err := readSmallFileInfo(path)
	return b, err
}

// readSmallFileInfo is readSmallFile, with what the file's descriptor
// said of it before it was read.
func readSmallFileInfo(path string) ([]byte, fs.FileInfo, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFile+1))
	if err == nil && len(b) > maxGitFile {
		err = fmt.Errorf("%s is larger than %d bytes", path, maxGitFile)
	}
	return b, fi, err
}

// exists reports whether path is there (as itself, never followed).
func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// operation names the unfinished operation in g, or "".
func (g gitDir) operation() (string, error) {
	for _, op := range taskdir.InProgress {
		if ok, err := exists(filepath.Join(g.dir, op.File)); err != nil || ok {
			return op.What, err
		}
	}
	return "", nil
}

// usesReftable: refs are not files there, so git reads them.
func (g gitDir) usesReftable() (bool, error) { return exists(filepath.Join(g.common, "reftable")) }

// worktrees lists the repository's linked worktrees other than g itself.
// Deleting a repository breaks the worktrees that share it; deleting one
// of them leaves a stale entry in the main repository, which git prunes.
func (g gitDir) worktrees() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(g.common, "worktrees"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		admin := filepath.Join(g.common, "worktrees", e.Name())
		if admin == g.dir {
			continue
		}
		// Named by where the worktree is, when its admin dir says.
		where := admin
		if b, err := readSmallFile(filepath.Join(admin, "gitdir")); err == nil {
			where = filepath.Dir(strings.TrimRight(string(b), "\r\n"))
		}
		out = append(out, where)
	}
	return out, nil
}

// modules lists the submodule repositories under the common gitdir's
// modules/ (a submodule named a/b lives in modules/a/b; nested ones in
// modules/x/modules/y). Each must be some probed checkout's gitdir, or
// its commits could be lost unseen.
func (g gitDir) modules() ([]string, error) {
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() { // a link or a file is not a gitdir we would use
				continue
			}
			p := filepath.Join(dir, e.Name())
			if head, err := exists(filepath.Join(p, "HEAD")); err != nil {
				return err
			} else if head {
				out = append(out, p)
				if err := walk(filepath.Join(p, "modules")); err != nil {
					return err
				}
				continue
			}
			if err := walk(p); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(filepath.Join(g.common, "modules"))
}

// refs reads the repository's refs under refs/ from packed-refs and the
// loose files that override it, and a linked worktree's own (bisect,
// worktree, rewritten) from its gitdir. Symbolic refs are left out:
// their targets are refs of their own.
func (g gitDir) refs() (map[string]string, error) {
	refs := map[string]string{}
	switch b, err := readSmallFile(filepath.Join(g.common, "packed-refs")); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := parsePackedRefs(b, refs); err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(g.common, "packed-refs"), err)
		}
	}
	if err := g.looseRefs(filepath.Join(g.common, "refs"), "refs", refs); err != nil {
		return nil, err
	}
	if g.dir != g.common {
		// A linked worktree's own refs are these namespaces, and only
		// these: git reads every other ref from the common gitdir, so a
		// branch file here is not the branch.
		for _, ns := range worktreeRefs {
			if err := g.looseRefs(filepath.Join(g.dir, "refs", ns), "refs/"+ns, refs); err != nil {
				return nil, err
			}
		}
	}
	return refs, nil
}

// worktreeRefs are the ref namespaces git keeps per worktree.
var worktreeRefs = []string{"bisect", "worktree", "rewritten"}

// dirs is the common gitdir, then the worktree's own when it has one.
func (g gitDir) dirs() []string {
	if g.dir == g.common {
		return []string{g.common}
	}
	return []string{g.common, g.dir}
}

// localRef is one object the repository holds on to by name: a ref, or
// an entry of a reflog (named by its file, logs/...).
type localRef struct{ name, oid string }

// stashLog is the stash's reflog: its entries are the stash's own reason.
const stashLog = "logs/refs/stash"

// reflogs lists every object a reflog recorded, old and new values: a
// commit reset away, amended or left by a deleted branch is still only
// here. Each object is listed once, under the first log naming it.
func (g gitDir) reflogs() ([]localRef, error) {
	var out []localRef
	seen := map[string]bool{}
	read := func(p, n string) error {
		if n == stashLog {
			return nil
		}
		b, err := readSmallFile(p)
		if err != nil {
			return err
		}
		oids, err := parseReflog(b)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		for _, oid := range oids {
			if !seen[oid] {
				seen[oid] = true
				out = append(out, localRef{n, oid})
			}
		}
		return nil
	}
	for _, d := range g.dirs() {
		if err := walkFiles(filepath.Join(d, "logs"), "logs", read); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseReflog reads "<old> <new> <who> <when>\t<message>" lines; the
// all-zero id (a ref's creation or deletion) names nothing.
func parseReflog(b []byte) ([]string, error) {
	var oids []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) < 3 || !oidRE.MatchString(f[0]) || !oidRE.MatchString(f[1]) {
			return nil, fmt.Errorf("unexpected line %.80q", line)
		}
		for _, oid := range f[:2] {
			if strings.Trim(oid, "0") != "" {
				oids = append(oids, oid)
			}
		}
	}
	return oids, nil
}

func parsePackedRefs(b []byte, refs map[string]string) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		oid, name, ok := strings.Cut(line, " ")
		if !ok || !oidRE.MatchString(oid) || !strings.HasPrefix(name, "refs/") {
			return fmt.Errorf("unexpected line %q", line)
		}
		// git reads the one it finds first, and lists another: the
		// proof would see only one of the two commits.
		if _, twice := refs[name]; twice {
			return fmt.Errorf("%s is listed twice", name)
		}
		refs[name] = oid
	}
	return sc.Err()
}

func (g gitDir) looseRefs(dir, name string, refs map[string]string) error {
	return walkFiles(dir, name, func(p, n string) error {
		if strings.HasSuffix(n, ".lock") { // an update in flight; the ref itself is beside it
			return nil
		}
		b, err := readSmallFile(p)
		if err != nil {
			return err
		}
		v := strings.TrimRight(string(b), "\r\n")
		switch target, symbolic := strings.CutPrefix(v, "ref: "); {
		case oidRE.MatchString(v):
			refs[n] = v
		case symbolic && strings.HasPrefix(target, "refs/"):
			// It hides a packed ref of its name, and names one that is
			// read on its own.
			delete(refs, n)
		case symbolic:
			return fmt.Errorf("%s: a ref naming %.80q, outside refs/, which the proof does not follow", p, target)
		default:
			return fmt.Errorf("%s: unexpected ref %.80q", p, v)
		}
		return nil
	})
}

// walkFiles calls f for every file below dir (entries that are not
// directories), named name/<its path below dir>, in order; a missing
// dir holds none.
func walkFiles(dir, name string, f func(path, name string) error) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		p, n := filepath.Join(dir, e.Name()), name+"/"+e.Name()
		if e.IsDir() {
			err = walkFiles(p, n, f)
		} else {
			err = f(p, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// config is every key of the repository's own config files: config in
// the common gitdir, and config.worktree there and in the worktree's
// gitdir (read whether or not extensions.worktreeConfig is set: more
// keys only keep more).
func (g gitDir) config() (gitsafe.Config, error) {
	files := []string{filepath.Join(g.common, "config"), filepath.Join(g.common, "config.worktree")}
	if g.dir != g.common {
		files = append(files, filepath.Join(g.dir, "config.worktree"))
	}
	return gitsafe.Read(files, readSmallFile)
}
