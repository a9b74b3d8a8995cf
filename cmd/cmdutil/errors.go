package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
)

// FlagError is bad usage: a flag, an argument or a file (exit 2).
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf builds a FlagError.
func FlagErrorf(format string, a ...any) error {
	return &FlagError{Err: fmt.Errorf(format, a...)}
}

// HintedError carries the next command to run.
type HintedError struct {
	Err  error
	Hint string
}

func (e *HintedError) Error() string { return e.Err.Error() }
func (e *HintedError) Unwrap() error { return e.Err }

// WithHint attaches a hint to err.
func WithHint(err error, hint string) error { return &HintedError{Err: err, Hint: hint} }

// PartialError: some items failed and others succeeded (exit 3). The
// per-item results were already printed.
type PartialError struct {
	Failed, Total int
	What          string // "hosts"
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("%d of %d %s failed", e.Failed, e.Total, e.What)
}

// ExitCodeError carries an exit code decided elsewhere (a remote command's
// status, or one class shared by every failed item). Printed means the
// human output already said everything; with --json an envelope still
// goes to stderr whenever Msg is set.
type ExitCodeError struct {
	Code    int
	JSON    string
	Msg     string
	Printed bool
}

func (e *ExitCodeError) Error() string { return e.Msg }

// ErrInterrupted is returned when the user pressed Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// ExitInfo is how an error ends the process.
type ExitInfo struct {
	Exit int
	Code string // the JSON envelope's code
	Hint string
}

// Classify is the one place errors become exit codes (CONTRACT.md).
func Classify(err error) ExitInfo {
	if err == nil {
		return ExitInfo{Exit: 0}
	}
	info := classify(err)
	var h *HintedError
	if errors.As(err, &h) && info.Hint == "" {
		info.Hint = h.Hint
	}
	return info
}

func classify(err error) ExitInfo {
	var (
		flag    *FlagError
		partial *PartialError
		code    *ExitCodeError
		sshErr  *ssh.Error
		cfg     *ssh.ConfigError
		tr      *ssh.TrustRequiredError
		hk      *ssh.HostKeyChangedError
		locked  *state.LockedError
		open    *state.OpenError
		cas     *state.ConflictError
		stale   *state.StaleClaimError
		claimed *state.ClaimedError
		unsafe  *state.UnsafePathError
		decode  *profiles.DecodeError
		envConf *profiles.ConflictError
		secret  *profiles.SecretError
		coded   interface{ ExitCode() (int, string) }
	)
	switch {
	case errors.As(err, &code):
		return ExitInfo{Exit: code.Code, Code: orDefault(code.JSON, "error")}
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInfo{Exit: 130, Code: "interrupted"}
	case errors.As(err, &flag), errors.As(err, &cfg), errors.As(err, &decode):
		return ExitInfo{Exit: 2, Code: "usage"}
	case errors.As(err, &envConf):
		return ExitInfo{Exit: 10, Code: "conflict", Hint: "define the key in one of these origins only, or give them the same value: tier-1 origins never override each other, and a reference never loses to a different value"}
	case errors.As(err, &secret):
		return ExitInfo{Exit: 1, Code: "error", Hint: "check the reference: `kandev-exec secret ls`, the variable is exported, or the file is readable"}
	case errors.As(err, &sshErr):
		return sshExit(sshErr)
	case errors.As(err, &tr):
		return ExitInfo{Exit: 4, Code: "trust_required"}
	case errors.As(err, &hk):
		return ExitInfo{Exit: 5, Code: "host_key_changed"}
	case errors.As(err, &partial):
		return ExitInfo{Exit: 3, Code: "partial"}
	case errors.As(err, &locked):
		return ExitInfo{Exit: 11, Code: "locked", Hint: "wait for the other kandev-exec to finish, or raise --lock-timeout"}
	case errors.As(err, &open):
		return ExitInfo{Exit: 1, Code: "error", Hint: "the state directory comes from --state-dir, KANDEV_EXEC_STATE_DIR or the config file's state-dir"}
	case errors.As(err, &cas), errors.As(err, &stale), errors.As(err, &claimed):
		return ExitInfo{Exit: 10, Code: "conflict", Hint: "another kandev-exec changed it concurrently: re-read and retry"}
	case errors.As(err, &unsafe):
		return ExitInfo{Exit: 1, Code: "error", Hint: "remove the link or odd file from the state directory by hand, then retry"}
	case errors.As(err, &coded):
		exit, c := coded.ExitCode()
		return ExitInfo{Exit: exit, Code: c}
	}
	return ExitInfo{Exit: 1, Code: "error"}
}

func sshExit(e *ssh.Error) ExitInfo {
	info := ExitInfo{Hint: e.Hint}
	switch e.Class {
	case ssh.ClassConfig:
		info.Exit, info.Code = 2, "usage"
	case ssh.ClassTimeout, ssh.ClassNetwork:
		info.Exit, info.Code = 7, "unreachable"
	case ssh.ClassTrustRequired:
		info.Exit, info.Code = 4, "trust_required"
	case ssh.ClassHostKey:
		info.Exit, info.Code = 5, "host_key_changed"
	case ssh.ClassAuth:
		info.Exit, info.Code = 6, "auth_failed"
	default:
		info.Exit, info.Code = 1, "error"
	}
	return info
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// PrintError reports err on the error stream, as the JSON envelope when
// asJSON.
func PrintError(ios *IOStreams, err error, asJSON bool) {
	w := ios.ErrOut
	info := Classify(err)
	var code *ExitCodeError
	if errors.As(err, &code) && (code.Msg == "" || (code.Printed && !asJSON)) {
		return // already reported by the command
	}
	var partial *PartialError
	if errors.As(err, &partial) && !asJSON {
		return // the per-item rows said it
	}
	if asJSON {
		type body struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Hint    string `json:"hint,omitempty"`
		}
		b, _ := json.Marshal(map[string]body{"error": {info.Code, err.Error(), info.Hint}})
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "%s %v\n", ios.ColorScheme(w).Red("error:"), err)
	if info.Hint != "" {
		fmt.Fprintf(w, "hint: %s\n", info.Hint)
	}
}

// ExitCodes is the table printed by `help exit-codes`.
var ExitCodes = []struct {
	Code    int
	Name    string
	Meaning string
}{
	{0, "", "success (an empty list is success)"},
	{1, "error", "error"},
	{2, "usage", "usage: bad flag, argument or file"},
	{3, "partial", "partial: some hosts or items failed, others succeeded"},
	{4, "trust_required", "trust required: no pinned host key (run `host test`, then `host trust`)"},
	{5, "host_key_changed", "host key changed: the host presented a key other than the pinned one (never re-pinned silently)"},
	{6, "auth_failed", "authentication failed"},
	{7, "unreachable", "host unreachable: network error or timeout"},
	{8, "pending", "pending: work continues in the background (--detach, or a deadline reached with work left)"},
	{9, "refused", "refused: the host is quarantined or cordoned"},
	{10, "conflict", "conflict: environment precedence conflict, or a stale revision / claim"},
	{11, "locked", "local state locked by another process past the wait bound"},
	{130, "interrupted", "interrupted"},
}
