package reclaim

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A directory is emptied as the recheck just before it listed it: that
// walk found the tree as the proof's walk saw it (ev.proof), so the
// manifest says what each directory holds, and each file goes with one
// unlinkat, each directory is entered (openBeneath: no link, no mount),
// emptied the same way and removed with rmdir, nothing listed or stat'ed
// again. The manifest only guides: an entry that is not as it says (gone,
// of another type, another directory, a file that cannot be unlinked) is
// removed as an unlisted entry is, after an lstat of its own
// (removeEntry), and a directory still not empty once its listed entries
// are gone (something written in it since) is read again and emptied
// before its rmdir is tried again, so nothing goes unseen that a listing
// would have found.

// emptyListed removes the entries of d, which the manifest lists as
// m[i]'s subtree m[i+1:end], except keep; it names the entries that
// could not be removed (nil when none).
func emptyListed(d *dirFD, m manifest, i, end int, keep string, re *removeError) map[string]bool {
	var failed map[string]bool
	for j := i + 1; j < end; {
		next, name := subtreeEnd(m, j), baseName(m[j].rel)
		if name != keep && !removeListed(d, m, j, next, re) {
			if failed == nil {
				failed = map[string]bool{}
			}
			failed[name] = true
		}
		if re.mount {
			break
		}
		j = next
	}
	return failed
}

// removeListed removes m[j], an entry of d, with what the manifest lists
// below it (m[j+1:end]), and reports whether it is gone.
func removeListed(d *dirFD, m manifest, j, end int, re *removeError) bool {
	e, name := m[j], baseName(m[j].rel)
	if !e.isDir() {
		err := unix.Unlinkat(d.fd(), name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return true
		}
		return removeEntry(d, name, re)
	}
	sub, err := d.open(name)
	if err != nil || sub.st.Ino != e.ino {
		if err == nil {
			sub.close()
		}
		return removeEntry(d, name, re)
	}
	defer sub.close()
	failed := emptyListed(sub, m, j, end, "", re)
	if re.mount {
		return false
	}
	return rmdirEmptied(d, sub, name, failed, re)
}

// rmdirEmptied removes the directory name of parent, open as d and
// emptied but for failed. An entry made in it meanwhile makes rmdir
// fail: d is then read again and what is new removed, a few times at
// most, before rmdir is tried again; one that failed is not tried twice.
func rmdirEmptied(parent, d *dirFD, name string, failed map[string]bool, re *removeError) bool {
	err := unix.Unlinkat(parent.fd(), name, unix.AT_REMOVEDIR)
	if notEmpty(err) && failed == nil {
		failed = map[string]bool{}
	}
	for try := 0; notEmpty(err) && try < 3 && removeListing(d, failed, re); try++ {
		err = unix.Unlinkat(parent.fd(), name, unix.AT_REMOVEDIR)
	}
	switch {
	case re.mount:
		return false
	case err != nil && !errors.Is(err, unix.ENOENT):
		re.add(&fs.PathError{Op: "remove", Path: filepath.Join(parent.path, name), Err: err})
		return false
	}
	return true
}

func notEmpty(err error) bool { return errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) }

// removeAll removes every entry of d except those in keep, stopping at
// a mount point, reading d until a listing finds nothing new (a few
// times at most); one that failed is not tried twice, and what is left
// makes the caller's rmdir fail.
func removeAll(d *dirFD, re *removeError, keep ...string) {
	failed := make(map[string]bool, len(keep))
	for _, k := range keep {
		failed[k] = true
	}
	for range 3 {
		if !removeListing(d, failed, re) {
			return
		}
	}
}

// removeListing lists d once and removes each entry but those in failed,
// adding those it could not remove; it reports whether it tried any
// (false too once it stopped at a mount point or could not list d).
func removeListing(d *dirFD, failed map[string]bool, re *removeError) bool {
	names, err := d.names()
	if err != nil {
		re.add(err)
		return false
	}
	tried := false
	for _, n := range names {
		if failed[n] {
			continue
		}
		tried = true
		if !removeEntry(d, n, re) {
			failed[n] = true
		}
		if re.mount {
			return false
		}
	}
	return tried
}

// removeEntry removes name from d: a file, link, socket or the like with
// unlinkat, a directory by emptying it through its own descriptor first.
// It reports whether name is gone.
func removeEntry(d *dirFD, name string, re *removeError) bool {
	st, err := d.lstat(name)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		re.add(err)
		return false
	}
	if !isDir(st) {
		err = unix.Unlinkat(d.fd(), name, 0)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			re.add(&fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err})
			return false
		}
		return true
	}
	sub, err := d.open(name)
	if err != nil {
		re.add(err)
		return false
	}
	defer sub.close()
	if sub.st.Ino != st.Ino {
		re.add(fmt.Errorf("%s changed while it was being removed", sub.path))
		return false
	}
	failed := map[string]bool{}
	removeListing(sub, failed, re)
	if re.mount {
		return false
	}
	return rmdirEmptied(d, sub, name, failed, re)
}

// subtreeEnd is where m[i]'s subtree ends: a walk lists a directory's
// entries, each followed by its own, right after it.
func subtreeEnd(m manifest, i int) int {
	if !m[i].isDir() {
		return i + 1
	}
	if m[i].rel == "." {
		return len(m)
	}
	j := i + 1
	for j < len(m) && isBelow(m[j].rel, m[i].rel) {
		j++
	}
	return j
}

func isBelow(rel, dir string) bool {
	return len(rel) > len(dir) && rel[len(dir)] == '/' && rel[:len(dir)] == dir
}

// listedDir finds the directory name, with inode ino, among the entries
// m lists of m[i] (m[i+1:end]): its place and where its subtree ends,
// or (0, 0), which lists nothing, when it is not there.
func listedDir(m manifest, i, end int, name string, ino uint64) (int, int) {
	for j := i + 1; j < end; j = subtreeEnd(m, j) {
		if baseName(m[j].rel) == name && m[j].isDir() && m[j].ino == ino {
			return j, subtreeEnd(m, j)
		}
	}
	return 0, 0
}

func baseName(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }
