package state

import (
	"fmt"
	"regexp"
)

// Kinds and names become path segments, so they are checked before any
// path is built: no separators, no "." or "..", no leading dot (temp files
// start with one), bounded length.
var (
	kindPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

const (
	maxKindLen = 64
	maxNameLen = 128
)

func validateKind(kind Kind) error {
	if len(kind) > maxKindLen || !kindPattern.MatchString(string(kind)) {
		return fmt.Errorf("invalid record kind %q: want [a-z0-9][a-z0-9._-]*, at most %d bytes", kind, maxKindLen)
	}
	return nil
}

func validateKey(kind Kind, name string) error {
	if err := validateKind(kind); err != nil {
		return err
	}
	if len(name) > maxNameLen || !namePattern.MatchString(name) {
		return fmt.Errorf("invalid %s name %q: want [A-Za-z0-9][A-Za-z0-9._-]*, at most %d bytes", kind, name, maxNameLen)
	}
	return nil
}
