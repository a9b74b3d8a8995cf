package cmdutil

import (
	"encoding/json"
	"errors"
	"fmt"
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
	// Messages may quote what a host said: escaped for the terminal.
	fmt.Fprintf(w, "%s %s\n", ios.ColorScheme(w).Red("error:"), SafeText(err.Error()))
	if info.Hint != "" {
		fmt.Fprintf(w, "hint: %s\n", SafeText(info.Hint))
	}
}
