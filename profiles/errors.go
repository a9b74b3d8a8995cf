package profiles

import (
	"errors"
	"fmt"
	"strings"
)

// DecodeError is a bad profile, preset or --env flag (a usage error, exit
// code 2). File and Line are set when known, and Col (1-based, in
// characters) for a YAML syntax error; Key is the offending key. Messages
// never quote a value or a reference name.
type DecodeError struct {
	File string
	Line int
	Col  int
	Key  string
	Msg  string
}

func (e *DecodeError) Error() string {
	switch {
	case e.File != "" && e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ConflictError blocks a launch (exit code 10): the key has definitions that
// precedence may not choose between. Origins lists every origin of every
// surviving identity, distinct and sorted by byte order.
type ConflictError struct {
	Key     string
	Origins []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("environment key %q has conflicting definitions from %s",
		e.Key, strings.Join(e.Origins, ", "))
}

// ErrNoReveal is the cause when a reference wins but no reveal function was
// given.
var ErrNoReveal = errors.New("secret resolver unavailable")

// ErrNULValue is the cause when a revealed value holds a NUL byte, which no
// process environment can carry.
var ErrNULValue = errors.New("value contains a NUL byte")

// SecretError is a winning reference that could not be revealed. Its
// message names the key and origin only; the cause is kept for errors.Is and
// errors.As, and callers must not print it if it may name the reference.
type SecretError struct {
	Key    string
	Origin string
	Err    error
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("environment key %q from %s could not be resolved", e.Key, e.Origin)
}

func (e *SecretError) Unwrap() error { return e.Err }
