package reclaim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// A manifest is what one walk saw of each entry of a tree, in walk
// order. The removal walks the tree again just before it empties it and
// refuses any difference from the proof's walk, so nothing written,
// changed or moved between the proof and that walk is removed unseen.
// After it, what keeps work safe is not a walk: the tree goes by no
// task's name and no process worked in it when they were read after the
// rename, so nothing an agent runs can reach it to write (see
// docs/security.md). A removal cut short reports what it left (remains),
// so the next one finishes only that.

// entry is one file, link or directory as lstat saw it.
type entry struct {
	rel   string // relative to the tree's top, "." for the top
	mode  uint32 // type and permissions
	size  int64
	mtime int64 // nanoseconds
	ctime int64 // nanoseconds
	ino   uint64
	owner [2]uint32 // uid, gid
}

type manifest []entry

func entryOf(rel string, st *unix.Stat_t) entry {
	return entry{rel: rel, mode: uint32(st.Mode), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: uint64(st.Ino),
		owner: [2]uint32{st.Uid, st.Gid}}
}

func (a entry) isDir() bool { return a.mode&unix.S_IFMT == unix.S_IFDIR }

// sessionsRel holds the sessions' directories. A drained controller
// still writes its own files, each a regular file directly in its
// session's directory (its log, rotated in place, the log's generation,
// status.json, pid and port, and their temporary files), until it exits;
// that directory's times move with them. Those are left out, as our
// metadata. Anything deeper (a subdirectory, such as a checkout made
// there, and all below it), anything there but a regular file, and a
// session's directory that is itself a checkout (its files are work) are
// compared like the rest of the tree; so is sessions/ itself, whose times
// a new session's directory moves.
var sessionsRel = path.Join(metaDir, taskdir.SessionsDir)

// inManifest reports whether the walk records rel; inCheckout: its
// directory holds a .git entry.
func inManifest(rel string, st *unix.Stat_t, inCheckout bool) bool {
	return !isSessionFile(rel, st, inCheckout) && !isOurNote(rel, st)
}

func isSessionFile(rel string, st *unix.Stat_t, inCheckout bool) bool {
	rest, ok := strings.CutPrefix(rel, sessionsRel+"/")
	if !ok {
		return false
	}
	typ := st.Mode & unix.S_IFMT
	_, name, deeper := strings.Cut(rest, "/")
	if !deeper {
		return typ == unix.S_IFDIR // a session's directory
	}
	return !inCheckout && !strings.Contains(name, "/") && typ == unix.S_IFREG
}

// ourNotes are the files in .kandev/ that a removal of a leftover
// changes itself, with the most each may hold: the lock, which is never
// written, its holder note, which taking the lock again rewrites, and
// the note that a removal began (removalNote), which it writes again.
// They are left out only while they are that (a regular file no larger):
// anything else by their names is recorded like any entry, so what an
// agent wrote there keeps a leftover as added to.
var ourNotes = map[string]int64{
	taskdir.LockFiles[0]: 0,
	taskdir.LockFiles[1]: fsx.MaxNoteSize,
	removalNoteRel:       maxRemovalNote,
}

func isOurNote(rel string, st *unix.Stat_t) bool {
	limit, ok := ourNotes[rel]
	return ok && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size <= limit
}

// same reports whether b is a as the proof saw it. The top is renamed
// for the removal, which changes its ctime: only its type and inode
// count.
func (a entry) same(b entry) bool {
	if a.rel == "." {
		return a.rel == b.rel && a.mode&unix.S_IFMT == b.mode&unix.S_IFMT && a.ino == b.ino
	}
	return a == b
}

// firstChange names a difference between the proof's walk (m) and a
// later one (now), "" when there is none: an entry added or removed
// first, then one changed, and a directory whose only change is its
// times (an entry added or removed in it) last.
func (m manifest) firstChange(now manifest) string {
	if slices.EqualFunc(m, now, entry.same) {
		return "" // the usual answer, without the maps below
	}
	was := make(map[string]entry, len(m))
	for _, e := range m {
		was[e.rel] = e
	}
	is := make(map[string]bool, len(now))
	for _, e := range now {
		is[e.rel] = true
		if _, ok := was[e.rel]; !ok {
			return fmt.Sprintf("%q appeared", e.rel)
		}
	}
	for _, e := range m {
		if !is[e.rel] {
			return fmt.Sprintf("%q was removed", e.rel)
		}
	}
	dir := ""
	for _, e := range now {
		switch w := was[e.rel]; {
		case w.same(e):
		case !e.isDir():
			return fmt.Sprintf("%q changed", e.rel)
		case dir == "":
			dir = fmt.Sprintf("%q changed", e.rel)
		}
	}
	return dir
}

// maxRemains bounds what a removal cut short reports: past it the caller
// keeps nothing, and the next removal proves the remains in full.
const maxRemains = 1024

// key is an entry's short digest for remains: its path, type and inode,
// and for anything but a directory its size and mtime. Neither the mode
// nor the ctime counts, so that fixing what stopped the removal (chmod,
// chattr) does not make the remains look changed; a directory's mtime
// neither, since removing its entries changes it.
func (a entry) key() string {
	typ := a.mode & unix.S_IFMT
	s := fmt.Sprintf("%s\x00%o\x00%d", a.rel, typ, a.ino)
	if typ != unix.S_IFDIR {
		s += fmt.Sprintf("\x00%d\x00%d", a.size, a.mtime)
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// remainsOf is left's keys, when everything left (below top) is as the
// proof (m) saw it; nil when something is not (it was written during the
// removal) or there is too much to report.
func (m manifest) remainsOf(left manifest, top string) []string {
	if len(left) > maxRemains {
		return nil
	}
	proven := make(map[string]bool, len(m))
	for _, e := range m {
		proven[e.key()] = true
	}
	keys := make([]string, 0, len(left))
	for _, e := range left {
		if !proven[e.key()] {
			return nil
		}
		k, err := e.remainsKey(top)
		if err != nil {
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}

// outside names the first entry of m (below top) that is not one of
// remains: what was added or changed since the removal that left them
// was cut short.
func (m manifest) outside(remains []string, top string) string {
	left := make(map[string]bool, len(remains))
	for _, k := range remains {
		left[k] = true
	}
	for _, e := range m {
		if k, err := e.remainsKey(top); err != nil || !left[k] {
			return e.rel
		}
	}
	return ""
}

// remainsKey is key, and for a file its content's digest too: a file
// rewritten to its old size with its time set back is not what was left.
func (a entry) remainsKey(top string) (string, error) {
	if a.mode&unix.S_IFMT != unix.S_IFREG {
		return a.key(), nil
	}
	f, err := fsx.OpenFile(filepath.Join(top, a.rel), os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return a.key() + hex.EncodeToString(sum.Sum(nil)[:8]), nil
}
