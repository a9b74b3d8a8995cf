package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// DefaultLockTimeout bounds the wait for the store lock when
// Options.LockTimeout is zero.
const DefaultLockTimeout = 10 * time.Second

const (
	metaFile    = "meta.json"
	journalFile = "journal.jsonl"
	lockFile    = "lock"
	holderFile  = "lock.holder"
	recordsDir  = "records"
)

// Nothing in the store follows a symlink: a link planted in the state
// directory could otherwise redirect a write onto any file the user owns.
// The primitives are fsx's.
const (
	dirMode  = 0o700
	fileMode = 0o600
)

// Options tunes a FileStore.
type Options struct {
	// LockTimeout bounds how long a write waits for another process's
	// transaction; past it the write fails with *LockedError. 0 means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Now is the clock for timestamps and claim expiry; nil means
	// time.Now. Lock waits always use the real clock.
	Now func() time.Time
}

// FileStore is the Store kept in one local directory:
//
//	meta.json                    schema_version and journal epoch
//	records/<kind>/<name>.json   one record, with its claim if any
//	journal.jsonl                one Entry per line, append-only
//	lock, lock.holder            the transaction lock and who holds it
//
// Reads take no lock (every file is replaced by rename, so a reader sees a
// whole old or whole new file); writes take the lock for one transaction.
// It is safe for concurrent use by goroutines and processes.
type FileStore struct {
	dir         string
	lockTimeout time.Duration
	now         func() time.Time
	closed      atomic.Bool
}

var _ Store = (*FileStore)(nil)

// Open opens the store in dir. A directory that does not exist yet is
// not created: the store reads as empty, and its first write creates it
// (0700), so that reading never leaves anything behind. Any failure but a
// lock timeout (*LockedError) is an *OpenError that says what to do; it
// wraps *SchemaError for a store written by a newer schema, and
// *UnsafePathError for a symlink or a file where the directory should be.
func Open(dir string, opts Options) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("state: empty store directory")
	}
	s := &FileStore{dir: filepath.Clean(dir), lockTimeout: opts.LockTimeout, now: opts.Now}
	if s.lockTimeout <= 0 {
		s.lockTimeout = DefaultLockTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.absent() {
		return s, nil
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	return s, nil
}

// absent: the store directory does not exist (nor a link or file in its
// place), so there is nothing to read yet.
func (s *FileStore) absent() bool {
	_, err := os.Lstat(s.dir)
	return errors.Is(err, fs.ErrNotExist)
}

// uninitialized: nothing was ever written to the store (the directory
// may exist, made by another part of the state dir: the secret values).
func (s *FileStore) uninitialized() bool {
	for _, f := range []string{metaFile, journalFile} {
		if _, err := os.Lstat(s.path(f)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// prepare makes the store directory usable: created if missing, checked,
// and initialised (meta.json, an empty journal) if new.
func (s *FileStore) prepare() error {
	if err := s.openDir(); err != nil {
		return err
	}
	_, err := s.readMeta()
	if errors.Is(err, fs.ErrNotExist) {
		err = s.initialize()
	}
	var (
		locked *LockedError
		unsafe *UnsafePathError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &locked):
		return err
	case errors.As(err, &unsafe):
		return &OpenError{Dir: s.dir, Err: err, Fix: "move it away by hand, then retry"}
	case errors.Is(err, errNoMeta):
		return &OpenError{Dir: s.dir, Err: fmt.Errorf("state store %s has %s but no %s", s.dir, journalFile, metaFile),
			Fix: fmt.Sprintf("restore %s from a backup, or move %s away to start a new journal", s.path(metaFile), s.path(journalFile))}
	case errors.Is(err, errCorruptMeta):
		return &OpenError{Dir: s.dir, Err: err,
			Fix: fmt.Sprintf("restore %s from a backup, or move %s away to start an empty store", s.path(metaFile), s.dir)}
	case errors.Is(err, fs.ErrPermission):
		return &OpenError{Dir: s.dir, Err: err, Fix: fmt.Sprintf("make %s yours and writable (`chmod 700 %[1]s`), or use another directory", s.dir)}
	}
	return &OpenError{Dir: s.dir, Err: err}
}

// openDir makes sure the store directory exists and is a real directory,
// creating it (and its parents) if needed.
func (s *FileStore) openDir() error {
	err := fsx.CheckDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(s.dir, dirMode); err != nil {
			return &OpenError{Dir: s.dir, Err: fmt.Errorf("cannot create state store %s: %w", s.dir, err),
				Fix: fmt.Sprintf("create it yourself (`mkdir -p -m 700 %s`), or use a directory you can write", s.dir)}
		}
		err = fsx.CheckDir(s.dir)
	}
	var unsafe *UnsafePathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unsafe) && isSymlink(s.dir):
		fix := "replace the link with a directory, or use the directory itself"
		if target, lerr := filepath.EvalSymlinks(s.dir); lerr == nil {
			fix = fmt.Sprintf("use the directory itself (%s), or replace the link with a directory", target)
		}
		return &OpenError{Dir: s.dir, Err: err, Fix: fix}
	case errors.As(err, &unsafe):
		return &OpenError{Dir: s.dir, Err: err, Fix: "move it away, or use another directory"}
	}
	return &OpenError{Dir: s.dir, Err: err, Fix: "make its parent directories searchable by you, or use another directory"}
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// initialize writes meta.json and an empty journal, under the lock so two
// processes opening a new store agree on one epoch.
func (s *FileStore) initialize() error {
	l, err := s.lock(context.Background())
	if err != nil {
		return err
	}
	defer l.unlock()
	if _, err := s.readMeta(); !errors.Is(err, fs.ErrNotExist) {
		return err // another process initialised it meanwhile, or it is broken
	}
	// meta.json was removed: the old journal's epoch is unknown. Refuse
	// before writing anything, so that the next open refuses too.
	if _, err := os.Lstat(s.path(journalFile)); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = errNoMeta
		}
		return err
	}
	if err := ensureDir(s.path(recordsDir)); err != nil {
		return err
	}
	m := meta{SchemaVersion: SchemaVersion, Epoch: NewEpoch(), CreatedAt: s.now().UTC()}
	if err := s.writeMeta(m); err != nil {
		return err
	}
	return s.createJournal()
}

// Dir is the store directory.
func (s *FileStore) Dir() string { return s.dir }

// Close makes later calls fail; the store holds no descriptors between
// calls, so there is nothing else to release.
func (s *FileStore) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *FileStore) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

func (s *FileStore) ready(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("state store %s: %w", s.dir, fs.ErrClosed)
	}
	return ctx.Err()
}

// tx is one locked transaction.
type tx struct {
	now     time.Time
	journal *journalWriter
}

// record appends the journal entry for a write this transaction made.
func (t *tx) record(kind Kind, name string, ev Event, revision uint64) error {
	return t.journal.append(Entry{At: t.now, Kind: kind, Name: name, Type: ev.Type, Revision: revision, Detail: ev.Detail})
}

// update runs fn as one transaction: lock, re-read meta (a newer
// kandev-exec may have migrated the store meanwhile), open the journal,
// fn, unlock.
func (s *FileStore) update(ctx context.Context, fn func(*tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if s.uninitialized() {
		if err := s.prepare(); err != nil {
			return err // an *OpenError: the directory cannot be made
		}
	}
	l, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer l.unlock()
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	j, err := s.openJournal(&m)
	if err != nil {
		return err
	}
	defer j.close()
	return fn(&tx{now: s.now().UTC(), journal: j})
}

// ensureDir creates one directory level (0700) unless a real one is there,
// and makes a new one survive a crash.
func ensureDir(path string) error {
	created, err := fsx.EnsureDir(path, dirMode)
	if err != nil || !created {
		return err
	}
	return fsx.SyncDir(filepath.Dir(path))
}
