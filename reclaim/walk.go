package reclaim

import (
	"errors"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// tree is what one walk of a task directory found: the checkouts in it
// (every directory holding a .git entry, outside .git directories), every
// other entry that is not a directory (what git status must account for),
// the mount points it did not enter, and its size and newest change.
type tree struct {
	checkouts []string // relative, parents before children, "." first
	files     []string // relative, outside .git directories, .git entries left out
	mounts    []string
	bytes     int64
	newest    int64 // unix seconds
	onlyDirs  bool
}

// walkTree reads all of top through descriptors, following no link and
// entering no mount point.
func walkTree(top *dirFD) (tree, error) {
	t := tree{onlyDirs: true}
	t.account(top.st.Blocks, top.st.Mtim.Sec, true)
	err := t.walk(top, ".", false)
	return t, err
}

func (t *tree) account(blocks int64, mtime int64, dir bool) {
	t.bytes += blocks * 512
	t.newest = max(t.newest, mtime)
	t.onlyDirs = t.onlyDirs && dir
}

func (t *tree) walk(d *dirFD, rel string, inGitDir bool) error {
	names, err := d.names()
	if err != nil {
		return err
	}
	sort.Strings(names)
	if !inGitDir {
		for _, n := range names {
			if n == ".git" {
				t.checkouts = append(t.checkouts, rel)
			}
		}
	}
	for _, n := range names {
		st, err := d.lstat(n)
		if err != nil {
			return err
		}
		t.account(st.Blocks, st.Mtim.Sec, isDir(st))
		if !isDir(st) {
			if !inGitDir && n != ".git" {
				t.files = append(t.files, path.Join(rel, n))
			}
			continue
		}
		sub, err := d.open(n)
		if errors.Is(err, errMount) {
			t.mounts = append(t.mounts, filepath.Join(d.path, n))
			continue
		}
		if err != nil {
			return err
		}
		err = t.walk(sub, path.Join(rel, n), inGitDir || n == ".git")
		sub.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// age is how long ago the newest change in the tree was.
func (t tree) age(now time.Time) int64 { return max(0, now.Unix()-t.newest) }
