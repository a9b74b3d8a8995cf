package reclaim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// A fetch's scratch repository is <root>/.proof-<16 hex digits>, and
// beside it <root>/.proof-<same>.lock, whose flock its call holds from
// before the directory is made until after it is removed. A helper killed
// mid-call leaves both behind, and the kernel drops its flock: the next
// call that makes a scratch repository in that root removes each one it
// can lock, after the ownership check, and leaves alone every one whose
// lock a live call holds or that is not provably the login user's alone.
// The names are random and never reused, so a lock file that is removed
// while another process waits on it can never stand for a newer call's.

// scratchID is a scratch repository's random part.
var scratchID = ascii.Word{First: ascii.LowerHex, Rest: ascii.LowerHex, Lens: []int{16}}

// scratchOf is the id of the scratch repository a name under the root is
// (.proof-<id>), or the lock file or holder note of: "" for any other.
func scratchOf(name string) string {
	rest, ok := strings.CutPrefix(name, ".proof-")
	if !ok || len(rest) < 16 {
		return ""
	}
	id, suffix := rest[:16], rest[16:]
	if scratchID.MatchString(id) && (suffix == "" || suffix == ".lock" || suffix == ".lock.holder") {
		return id
	}
	return ""
}

// oldScratchID is the random part an older helper gave its scratch
// repositories (os.MkdirTemp's decimal digits), which it never locked.
var oldScratchID = ascii.Word{First: ascii.Digits, Rest: ascii.Digits, Max: 10}

// oldScratchOf is the id of the older helper's scratch repository a name
// is (.proof-<digits>): "" for any other.
func oldScratchOf(name string) string {
	if rest, ok := strings.CutPrefix(name, ".proof-"); ok && oldScratchID.MatchString(rest) {
		return rest
	}
	return ""
}

func scratchPaths(root, id string) (dir, lock string) {
	dir = filepath.Join(root, ".proof-"+id)
	return dir, dir + ".lock"
}

// scratchRepos are the repositories one call made, to remove at its end,
// and the roots it has swept of the ones killed calls left.
type scratchRepos struct {
	mu    sync.Mutex
	made  []scratchRepo
	swept map[string]bool
}

type scratchRepo struct {
	dir, lockPath string
	lock          *fsx.Lock
}

// make creates a scratch repository's directory under root, locked for
// this call; the first in each root sweeps it first.
func (s *scratchRepos) make(ctx context.Context, h *host, root string) (string, error) {
	s.mu.Lock()
	if !s.swept[root] {
		if s.swept == nil {
			s.swept = map[string]bool{}
		}
		s.swept[root] = true
		sweepScratch(ctx, root, h.uid)
	}
	s.mu.Unlock()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	dir, lockPath := scratchPaths(root, hex.EncodeToString(b))
	l, err := fsx.Acquire(ctx, lockPath, fsx.LockOptions{What: "scratch repository", Path: dir})
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		_ = os.Remove(lockPath)
		l.Release()
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made = append(s.made, scratchRepo{dir: dir, lockPath: lockPath, lock: l})
	return dir, nil
}

func (s *scratchRepos) removeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.made {
		removeScratch(r.dir, r.lockPath, r.lock)
	}
	s.made = nil
}

// removeScratch removes a scratch repository and its lock file, then lets
// go of the lock. Best effort: a leftover holds only the remote's objects,
// and the next call's sweep finds it.
func removeScratch(dir, lockPath string, l *fsx.Lock) {
	_ = os.RemoveAll(dir)
	_ = os.Remove(lockPath)
	l.Release()
}

// sweepScratch removes what killed calls left in root: each scratch
// repository (and lock file) that is the login user's alone and whose
// lock nobody holds.
func sweepScratch(ctx context.Context, root string, uid int) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	ids := map[string]bool{}
	for _, e := range entries {
		if id := scratchOf(e.Name()); id != "" {
			ids[id] = true
		} else if id := oldScratchOf(e.Name()); id != "" && e.IsDir() {
			sweepOldScratch(ctx, root, id, uid)
		}
	}
	for id := range ids {
		dir, lockPath := scratchPaths(root, id)
		if !privateOrAbsent(dir, uid, true) || !privateOrAbsent(lockPath, uid, false) {
			continue
		}
		l, err := fsx.Acquire(ctx, lockPath, fsx.LockOptions{What: "scratch repository", Path: dir})
		if err != nil {
			continue // a live call's, or not ours to lock
		}
		removeScratch(dir, lockPath, l)
	}
}

// sweepOldScratch removes an older helper's scratch repository under the
// same rule, locked as .proof-<digits>.lock against another sweep. The
// older helper took no lock, so one it still fetches into is told by its
// processes: the repository goes only when no process of the login user
// uses it, nor one that cannot be inspected. An older helper between two
// of its gits then fails its fetch, which keeps its directory.
func sweepOldScratch(ctx context.Context, root, id string, uid int) {
	dir, lockPath := scratchPaths(root, id)
	if !privateOrAbsent(dir, uid, true) || !privateOrAbsent(lockPath, uid, false) {
		return
	}
	l, err := fsx.Acquire(ctx, lockPath, fsx.LockOptions{What: "scratch repository", Path: dir})
	if err != nil {
		return
	}
	if users, unknown := processesUsing(ctx, dir, uid, inodes{}); len(users) > 0 || unknown != "" {
		_ = os.Remove(lockPath)
		l.Release()
		return
	}
	removeScratch(dir, lockPath, l)
}

// privateOrAbsent: path is absent, or passes the ownership check.
func privateOrAbsent(path string, uid int, dir bool) bool {
	err := fsx.CheckPrivate(path, uid, dir)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}
