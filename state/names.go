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

// ValidateKind checks a kind before any path or key is built from it;
// every backend applies the same rules.
func ValidateKind(kind Kind) error {
	if len(kind) > maxKindLen || !kindPattern.MatchString(string(kind)) {
		return fmt.Errorf("invalid record kind %q: want [a-z0-9][a-z0-9._-]*, at most %d bytes", kind, maxKindLen)
	}
	return nil
}

// ValidateKey checks a kind and a record name.
func ValidateKey(kind Kind, name string) error {
	if err := ValidateKind(kind); err != nil {
		return err
	}
	if len(name) > maxNameLen || !namePattern.MatchString(name) {
		return fmt.Errorf("invalid %s name %q: want [A-Za-z0-9][A-Za-z0-9._-]*, at most %d bytes", kind, name, maxNameLen)
	}
	return nil
}
