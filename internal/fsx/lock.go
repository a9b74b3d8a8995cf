package fsx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// A lock is flock(2) on a file: the kernel drops it when the holder dies,
// so a crash never leaves anything locked. Locks taken on separate open
// files conflict even within one process, so goroutines serialise too.
// Waiting polls with LOCK_NB so it can be bounded and cancelled; a
// blocking flock could be neither.
//
// The lock file itself is never written: who holds it goes into a note
// beside it (<lock>.holder), written after acquiring and removed before
// letting go, so a waiter never names a process that has already let go.
// The note only improves a waiter's error; the flock is the lock.

// Holder names the process holding a lock.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// Self is this process as a holder since now.
func Self(now time.Time) Holder {
	return Holder{PID: os.Getpid(), Command: CommandName(os.Args), Since: now.UTC()}
}

const maxCommandLen = 256

// CommandName is the program and its subcommand words ("kandev-exec task
// launch"), never flags or arguments: those may carry values (--env K=V)
// that must not end up in lock notes, records or error messages.
func CommandName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	words := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		if len(words) == 3 || strings.HasPrefix(a, "-") || strings.ContainsAny(a, "=/ ") {
			break
		}
		words = append(words, a)
	}
	s := strings.Join(words, " ")
	if len(s) <= maxCommandLen {
		return s
	}
	n := maxCommandLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// LockedError: a lock was not obtained within its wait bound. Holder is
// what the holder note said, nil when it was absent or unreadable.
type LockedError struct {
	What   string // what the lock guards, e.g. "state store"
	Path   string // the thing locked, as named to the user
	Waited time.Duration
	Holder *Holder
}

func (e *LockedError) Error() string {
	name := strings.TrimSpace(e.What + " " + e.Path)
	if e.Holder == nil {
		return fmt.Sprintf("%s is locked by another process (waited %s)", name, e.Waited)
	}
	return fmt.Sprintf("%s is locked by pid %d (%s) since %s (waited %s)", name,
		e.Holder.PID, e.Holder.Command, e.Holder.Since.UTC().Format(time.RFC3339), e.Waited)
}

// LockOptions says how Acquire waits and how it names things.
type LockOptions struct {
	What   string        // what the lock guards, for errors: "state store"
	Path   string        // the thing locked, for errors; default the lock file
	Wait   time.Duration // how long to wait for a holder to let go; 0: not at all
	Holder Holder        // written into the note; zero means Self(time.Now())
}

// Lock is a held lock.
type Lock struct {
	f    *os.File
	note string
}

const maxPoll = 50 * time.Millisecond

// Acquire takes the exclusive flock on path (created 0600 if absent, never
// through a symlink), waiting at most o.Wait: past it, *LockedError naming
// the holder; when ctx ends first, ctx's error wrapped.
func Acquire(ctx context.Context, path string, o LockOptions) (*Lock, error) {
	name := o.Path
	if name == "" {
		name = path
	}
	f, err := OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for wait := time.Millisecond; ; wait = min(2*wait, maxPoll) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		waited := time.Since(start)
		if waited >= o.Wait {
			f.Close()
			return nil, &LockedError{What: o.What, Path: name, Waited: waited.Round(time.Millisecond), Holder: ReadHolder(path)}
		}
		t := time.NewTimer(min(wait, o.Wait-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for the lock on %s: %w", strings.TrimSpace(o.What+" "+name), ctx.Err())
		case <-t.C:
		}
	}
	l := &Lock{f: f, note: notePath(path)}
	h := o.Holder
	if h == (Holder{}) {
		h = Self(time.Now())
	}
	// Best effort: the note only improves a waiter's error message.
	if b, err := json.Marshal(h); err == nil {
		_ = WriteFile(l.note, b, false)
	}
	return l, nil
}

// Moved says the lock file is at path now, its directory renamed while
// the lock is held (the flock goes with the open file): Release removes
// the note there, not where it no longer is.
func (l *Lock) Moved(path string) { l.note = notePath(path) }

// Stat describes the lock file held, wherever it is now: a holder that
// took the lock by a path can tell whether it is the file there.
func (l *Lock) Stat() (os.FileInfo, error) { return l.f.Stat() }

// Release removes the holder note, then drops the lock.
func (l *Lock) Release() {
	os.Remove(l.note)
	l.f.Close() // closing the last descriptor releases the flock
}

// ReadHolder is what the note beside the lock file at path says; nil when
// it is absent or unreadable.
func ReadHolder(path string) *Holder {
	b, err := ReadFileMax(notePath(path), MaxNoteSize)
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

// NoteSuffix names a lock's holder note: the lock file's name with it.
const NoteSuffix = ".holder"

// MaxNoteSize bounds a holder note: a larger one is not read, nor one of
// ours (a holder is a pid, a command name of at most 256 bytes and a time).
const MaxNoteSize = 4 << 10

func notePath(lock string) string { return lock + NoteSuffix }
