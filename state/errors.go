package state

import (
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// ErrNotFound is matched with errors.Is on a *NotFoundError.
var ErrNotFound = errors.New("not found")

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
