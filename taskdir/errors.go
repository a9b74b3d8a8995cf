// Package taskdir is the task-directory half of what the helper does on a
// host (helper/protocol carries its requests): making, checking and
// preparing <root>/tasks/<task-dir>/ and running scripts in it. Of this
// module it imports only the shared primitives (internal/fsx,
// internal/gitsafe, internal/redact): the host has no store, no profiles
// and no SSH.
package taskdir

import "fmt"

// Error codes carried in a failed response.
const (
	CodeBadRequest     = "bad_request"
	CodeUnsafePath     = "unsafe_path"
	CodeOwnerMismatch  = "owner_mismatch"
	CodeOriginMismatch = "origin_mismatch"
	CodeGitFailed      = "git_failed"
	CodeVerifyFailed   = "verify_failed"
	CodeTimeout        = "timeout"
	CodeIO             = "io_error"
	CodeUnsafeCheckout = "unsafe_checkout" // detached commits or an unfinished rebase/merge a checkout could lose
	CodeBusy           = "busy"            // another prepare or run-script holds the task dir's lock
)

// Error is a failed operation as the caller sees it.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
