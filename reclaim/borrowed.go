package reclaim

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A repository cloned with --shared or --reference reads objects from
// another one through objects/info/alternates, and breaks when that one
// is removed. Nothing is recorded on the lender's side, so the proof
// looks for borrowers where it reasonably can (docs/security.md says
// where): every other task directory under the same root (its top
// checkout, the checkouts one level below it, and the submodule
// repositories in their gitdirs), and the login user's home directory
// two levels deep (working or bare repositories, outside dot-directories).
// A repository in the directory that borrows from elsewhere is fine to
// remove.

// lenders maps each directory some repository borrows objects from
// (resolved) to the gitdirs borrowing from it. It is built once per call
// and root.
type lenders struct {
	mu     sync.Mutex
	byRoot map[string]*lenderScan
}

type lenderScan struct {
	once    sync.Once
	borrows map[string][]string
}

// borrowersOf lists the repositories outside dir whose alternates point
// at or below it.
func (h *host) borrowersOf(root, dir string) []string {
	h.lenders.mu.Lock()
	if h.lenders.byRoot == nil {
		h.lenders.byRoot = map[string]*lenderScan{}
	}
	s := h.lenders.byRoot[root]
	if s == nil {
		s = &lenderScan{}
		h.lenders.byRoot[root] = s
	}
	h.lenders.mu.Unlock()
	s.once.Do(func() { s.borrows = scanBorrowers(root) })
	var out []string
	for lent, by := range s.borrows {
		if !within(lent, dir) {
			continue
		}
		for _, b := range by {
			if !within(b, dir) {
				out = append(out, b)
			}
		}
	}
	sort.Strings(out)
	return out
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// scanBorrowers reads the alternates of every repository in scope. What
// cannot be read is passed over: this is a search for what can be seen.
func scanBorrowers(root string) map[string][]string {
	borrows := map[string][]string{}
	add := func(gitdir string) {
		for _, lent := range alternatesOf(gitdir) {
			borrows[lent] = append(borrows[lent], gitdir)
		}
	}
	for _, d := range subdirs(filepath.Join(root, tasksDir)) {
		for _, c := range append([]string{d}, subdirs(d)...) {
			if g := filepath.Join(c, ".git"); isRealDir(g) {
				add(g)
				for _, m := range submoduleGitdirs(g) {
					add(m)
				}
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, d := range subdirs(home) {
			for _, c := range append([]string{d}, subdirs(d)...) {
				add(filepath.Join(c, ".git"))
				add(c) // a bare repository
			}
		}
	}
	return borrows
}

// subdirs lists the directories in dir, sorted, passing over links and
// dot-directories (an interrupted removal among task directories, caches
// and tools' state in a home directory).
func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func isRealDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// submoduleGitdirs are the repositories under gitdir's modules/.
func submoduleGitdirs(gitdir string) []string {
	ms, err := gitDir{dir: gitdir, common: gitdir}.modules()
	if err != nil {
		return nil
	}
	return ms
}

// alternatesOf is what gitdir borrows from, as far as can be read.
func alternatesOf(gitdir string) []string {
	out, _ := alternatesIn(filepath.Join(gitdir, "objects"))
	return out
}

// alternatesIn resolves each line of objects/info/alternates: an
// absolute path, or one relative to the objects directory, possibly
// C-quoted. One that does not resolve lends nothing now; a file that is
// there but cannot be read is an error.
func alternatesIn(objects string) ([]string, error) {
	b, err := readSmallFile(filepath.Join(objects, "info", "alternates"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			if uq, err := strconv.Unquote(line); err == nil {
				line = uq
			}
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		if real, err := filepath.EvalSymlinks(line); err == nil {
			out = append(out, real)
		} else if !errors.Is(err, fs.ErrNotExist) {
			out = append(out, filepath.Clean(line))
		}
	}
	return out, nil
}
