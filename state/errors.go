package state

import (
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// ErrNotFound is matched with errors.Is on a *NotFoundError.
var ErrNotFound = errors.New("not found")

// ErrTxnWritten: a Tx was used after its one write.
var ErrTxnWritten = errors.New("state: a transaction makes one write, as its last call")

// NotFoundError names the record that is missing.
type NotFoundError struct {
	Kind Kind
	Name string
}

func (e *NotFoundError) Error() string        { return fmt.Sprintf("%s %q not found", e.Kind, e.Name) }
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ConflictError is a failed compare-and-swap (exit code 10).
type ConflictError struct {
	Kind     Kind
	Name     string
	Expected uint64 // 0 when the conflict is "already exists"
	Actual   uint64
}

func (e *ConflictError) Error() string {
	if e.Expected == 0 {
		return fmt.Sprintf("%s %q already exists (revision %d)", e.Kind, e.Name, e.Actual)
	}
	return fmt.Sprintf("%s %q changed concurrently: expected revision %d, found %d", e.Kind, e.Name, e.Expected, e.Actual)
}

// CorruptRecordError: a stored record that cannot be read, or whose
// contents name another record. Where is its location (Store.Locate);
// Remedy, when set, is the command that removes it; Aside is how to move
// it aside by hand (default: mv of the file Where names).
type CorruptRecordError struct {
	Kind   Kind
	Name   string
	Where  string
	Reason string
	Remedy string
	Aside  string
}

func (e *CorruptRecordError) Error() string {
	msg := fmt.Sprintf("%s %q: record %s is unreadable: %s; ", e.Kind, e.Name, e.Where, e.Reason)
	if e.Remedy != "" {
		msg += fmt.Sprintf("run `%s`, or ", e.Remedy)
	}
	aside := e.Aside
	if aside == "" {
		aside = fmt.Sprintf("mv %s %s", shquote.Quote(e.Where), shquote.Quote(e.Where+".bad"))
	}
	return msg + fmt.Sprintf("move it aside (%s) and retry", aside)
}

// StaleClaimError is a write under a claim that is no longer current, or
// with the wrong sequence (exit code 10).
type StaleClaimError struct {
	Kind   Kind
	Name   string
	Reason string
}

func (e *StaleClaimError) Error() string {
	return fmt.Sprintf("stale claim on %s %q: %s", e.Kind, e.Name, e.Reason)
}

// ClaimedError: another live holder has the claim (exit code 10).
type ClaimedError struct {
	Kind   Kind
	Name   string
	Holder Holder
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%s %q is claimed by pid %d (%s) on %s since %s", e.Kind, e.Name,
		e.Holder.PID, e.Holder.Command, e.Holder.Host, e.Holder.Since.UTC().Format(time.RFC3339))
}

// LockedError: the store lock was not obtained within the wait bound
// (exit code 11). It is fsx's, so every bounded lock maps the same way.
type LockedError = fsx.LockedError

// UnsafePathError: a symlink or non-regular file sits where a state file
// or directory should be; the store refuses to follow it.
type UnsafePathError = fsx.UnsafePathError

// SchemaError: the store was written by a newer kandev-exec.
type SchemaError struct {
	Path  string
	Found int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("state store %s has schema_version %d; this kandev-exec understands up to %d (upgrade kandev-exec)", e.Path, e.Found, SchemaVersion)
}

// OpenError: the store cannot be opened or created. Err names the path and
// why; Fix says what to do about it.
type OpenError struct {
	Dir string
	Err error
	Fix string
}

func (e *OpenError) Error() string {
	if e.Fix == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "; " + e.Fix
}

func (e *OpenError) Unwrap() error { return e.Err }

// UnreachableError: a shared store did not answer within the call's
// deadline (exit code 7). Store names its endpoints. Unknown is set when
// a write was sent but whether it landed could not be learned before the
// deadline: the next read tells.
type UnreachableError struct {
	Store   string
	Op      string
	Waited  time.Duration
	Unknown bool
	Err     error
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("state store %s unreachable: %s did not complete within %s", e.Store, e.Op, e.Waited.Round(time.Millisecond))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Unknown {
		msg += " (the write was sent and may have landed: read it back before retrying)"
	}
	return msg
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// AuthError: a shared store refused our credentials or this user's
// access to the prefix (exit code 6).
type AuthError struct {
	Store string
	User  string // "" without user authentication
	Err   error
}

func (e *AuthError) Error() string {
	who := "access without a user name"
	if e.User != "" {
		who = fmt.Sprintf("user %q", e.User)
	}
	return fmt.Sprintf("state store %s refused %s: %v", e.Store, who, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// ContendedError: a write to a shared store kept losing to other writers
// until its wait bound (exit code 11, as a lock wait past its bound).
// Nothing was written.
type ContendedError struct {
	Store    string
	Op       string
	Attempts int
	Waited   time.Duration
}

func (e *ContendedError) Error() string {
	return fmt.Sprintf("state store %s: %s lost to concurrent writers %d times in %s; nothing was written",
		e.Store, e.Op, e.Attempts, e.Waited.Round(time.Millisecond))
}
