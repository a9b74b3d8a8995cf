package reclaim

import (
	"errors"
	"path/filepath"
	"slices"
	"time"
)

// tree is what one walk of a task directory found: the checkouts in it
// (every directory holding a .git entry, outside .git directories), the
// mount points it did not enter, its size and newest change, and what it
// saw of each entry (entries): the removal compares them with a walk of
// its own, and the proof gives each checkout the files in it that git
// status must account for (filesByCheckout).
type tree struct {
	checkouts []string // relative, parents before children, "." first
	mounts    []string
	bytes     int64
	newest    int64 // unix seconds
	onlyDirs  bool
	entries   manifest
}

// walkTree reads all of top through descriptors, following no link and
// entering no mount point.
func walkTree(top *dirFD) (tree, error) {
	t := tree{onlyDirs: true, entries: manifest{entryOf(".", &top.st)}}
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
	slices.Sort(names)
	checkout := !inGitDir && slices.Contains(names, ".git")
	if checkout {
		t.checkouts = append(t.checkouts, rel)
	}
	for _, n := range names {
		st, err := d.lstat(n)
		if err != nil {
			return err
		}
		t.account(st.Blocks, st.Mtim.Sec, isDir(st))
		sub := childRel(rel, n)
		if inManifest(sub, &st, checkout) {
			t.entries = append(t.entries, entryOf(sub, &st))
		}
		if !isDir(st) {
			continue
		}
		sd, err := d.open(n)
		if errors.Is(err, errMount) {
			t.mounts = append(t.mounts, filepath.Join(d.path, n))
			continue
		}
		if err != nil {
			return err
		}
		err = t.walk(sd, sub, inGitDir || n == ".git")
		sd.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// childRel is path.Join(rel, name) for a name a listing gave (one
// segment, never "." or ".."), without its cleaning pass.
func childRel(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "/" + name
}

// age is how long ago the newest change in the tree was.
func (t tree) age(now time.Time) int64 { return max(0, now.Unix()-t.newest) }
