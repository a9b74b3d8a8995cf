package reclaim

import (
	"encoding/binary"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
)

// A clean checkout's status read from its files, instead of from the one
// `git status` its proof otherwise costs. It answers only "clean", and
// only when the files show it without git's help: the tree the index's
// entries make hashes to the tree of HEAD's commit (whose own content is
// checked against its name), and every file the walk found is an entry
// of that index, unchanged since git recorded it (its stat data the same,
// and recorded after its last change) or, where not, with the content
// the entry names (hashed here, as it is on disk). So every file is a
// blob of HEAD's tree, byte for byte, and HEAD's tree is the index's.
// Anything else (a difference, a file the index lacks, an entry git
// marks, a layout it does not read the way git does) and git status runs
// as before and says what it is. docs/security.md says what this proves.

// indexStat is one entry of the index as its file records it: the stat
// data git compares, and the flags that mark it.
type indexStat struct {
	path       string
	data       []byte // ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size: big-endian
	flags, ext uint16
}

func statOfEntry(b []byte, name string, hashLen int) indexStat {
	s := indexStat{path: name, data: b[:ceStatLen:ceStatLen], flags: binary.BigEndian.Uint16(b[ceStatLen+hashLen:])}
	if s.flags&ceExtended != 0 {
		s.ext = binary.BigEndian.Uint16(b[ceStatLen+hashLen+2:])
	}
	return s
}

func (s indexStat) u32(at int) uint32 { return binary.BigEndian.Uint32(s.data[at:]) }

// marked: an entry git would not simply compare (a merge stage,
// assume-unchanged, skip-worktree, intent-to-add).
func (s indexStat) marked() bool { return s.flags&(ceStageMask|ceValid) != 0 || s.ext != 0 }

// recorded reports whether e, as the walk saw it, is the file git
// recorded in s after its last change: the same inode, times, owner and
// size, as git compares them (core.checkStat=default), both times older
// than the index file (stamp), so that no change made in the same clock
// tick as git's reading can hide behind them. A recorded size of zero
// vouches for nothing: git writes it for an entry it found racily clean,
// and then compares the content.
func (s indexStat) recorded(e entry, stamp int64) bool {
	split := func(ns int64) (uint32, uint32) { return uint32(ns / 1e9), uint32(ns % 1e9) }
	cs, cns := split(e.ctime)
	ms, mns := split(e.mtime)
	return e.ctime > 0 && e.mtime > 0 && e.ctime < stamp && e.mtime < stamp &&
		s.u32(0) == cs && s.u32(4) == cns && s.u32(8) == ms && s.u32(12) == mns &&
		s.u32(20) == uint32(e.ino) && s.u32(28) == e.owner[0] && s.u32(32) == e.owner[1] &&
		s.u32(36) != 0 && s.u32(36) == uint32(e.size)
}

// maxHashedBytes bounds the content hashed for files whose stat data do
// not vouch for them: past it git, which refreshes its index as it
// compares, decides.
const maxHashedBytes = 16 << 20

// fromFiles is what the proof read of a checkout it found clean by its
// files: the status, the index, and the refs read for HEAD (nil when it
// names a commit itself), which the check of what the refs hold takes
// rather than reading them again.
type fromFiles struct {
	st   status
	idx  map[string]indexEntry
	refs map[string]string
}

// cleanFromFiles is what the files of the checkout at dir (gitdir g,
// config cfg) say when they prove it clean; ok false: ask git. files are
// the walk's entries of the checkout that are not directories, relative
// to it; top: dir is the task directory's top, whose .kandev/ is ours.
func cleanFromFiles(dir string, g gitDir, cfg gitsafe.Config, files []entry, top bool) (fromFiles, bool) {
	if !plainRepository(cfg) || sparseSetting(g, cfg) != nil {
		return fromFiles{}, false
	}
	hashLen, err := indexHashLen(cfg, filepath.Join(g.common, "config"))
	if err != nil {
		return fromFiles{}, false
	}
	head, refs, err := g.head()
	if err != nil || len(head) != 2*hashLen {
		return fromFiles{}, false
	}
	b, fi, err := readSmallFileInfo(filepath.Join(g.dir, "index"))
	if err != nil {
		return fromFiles{}, false
	}
	var stats []indexStat
	idx, err := parseIndexStat(b, hashLen, &stats)
	if err != nil || len(stats) != len(idx) {
		return fromFiles{}, false
	}
	tree, err := commitTree(filepath.Join(g.common, "objects"), head)
	if err != nil {
		return fromFiles{}, false
	}
	if got, err := indexTree(stats, idx, hashLen); err != nil || got != tree {
		return fromFiles{}, false
	}
	if !filesRecorded(dir, files, stats, idx, fi.ModTime().UnixNano(), top) {
		return fromFiles{}, false
	}
	return fromFiles{st: status{head: head}, idx: idx, refs: refs}, true
}

// plainRepository: a repository format git reads as this reader does,
// with no extension but the object format (another changes where refs
// or objects live, or what git refuses to read).
func plainRepository(cfg gitsafe.Config) bool {
	for _, e := range cfg {
		k := e.Key()
		switch {
		case k == "core.repositoryformatversion" && e.Value != "0" && e.Value != "1":
			return false
		case strings.HasPrefix(k, "extensions.") && k != "extensions.objectformat":
			return false
		}
	}
	return true
}

// filesRecorded reports whether the walk's files are exactly the index's
// entries, each unmarked and its file the one the entry names, and each
// of its directories holds one (git reports an ignored directory even
// when it is empty); .kandev/ of the top aside, which is ours. stamp is
// the index file's mtime.
func filesRecorded(dir string, files []entry, stats []indexStat, idx map[string]indexEntry, stamp int64, top bool) bool {
	byPath := make(map[string]indexStat, len(stats))
	tracked := map[string]bool{}
	for _, s := range stats {
		if s.marked() {
			return false
		}
		byPath[s.path] = s
		for d := path.Dir(s.path); d != "." && !tracked[d]; d = path.Dir(d) {
			tracked[d] = true
		}
	}
	matched, budget := 0, int64(maxHashedBytes)
	for _, f := range files {
		s, ok := byPath[f.rel]
		switch {
		case top && (f.rel == metaDir || strings.HasPrefix(f.rel, metaDir+"/")):
			if ok {
				return false // ours, and tracked: git's to say
			}
			continue
		case f.isDir():
			if !tracked[f.rel] {
				return false
			}
			continue
		case !ok || !sameType(f, idx[f.rel].mode):
			return false
		case s.recorded(f, stamp):
		case f.mode&unix.S_IFMT != unix.S_IFREG || f.size > budget:
			return false // a link's stat data change with it: it differs
		default:
			budget -= f.size
			if !sameContent(filepath.Join(dir, f.rel), f, idx[f.rel].oid) {
				return false
			}
		}
		matched++
	}
	return matched == len(stats)
}

// sameType: the walk's entry is what git, comparing file modes, takes
// for the index's mode (the owner's execute bit decides 100755).
func sameType(f entry, mode string) bool {
	switch typ := f.mode & unix.S_IFMT; mode {
	case "100644":
		return typ == unix.S_IFREG && f.mode&unix.S_IXUSR == 0
	case "100755":
		return typ == unix.S_IFREG && f.mode&unix.S_IXUSR != 0
	case "120000":
		return typ == unix.S_IFLNK
	}
	return false
}

// sameContent reports whether the regular file at p, still the one the
// walk saw (f), holds the blob oid names, as it is on disk (no filter or
// line-ending conversion).
func sameContent(p string, f entry, oid string) bool {
	fd, err := fsx.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer fd.Close()
	var st unix.Stat_t
	if unix.Fstat(int(fd.Fd()), &st) != nil || entryOf(f.rel, &st) != f {
		return false
	}
	got, err := blobID(fd, f.size, len(oid))
	return err == nil && got == oid
}
