package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
)

// Every typed error lands on CONTRACT.md's exit code and JSON code, also
// when wrapped.
func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		exit int
		code string
	}{
		{FlagErrorf("x"), 2, "usage"},
		{&ssh.ConfigError{Msg: "x"}, 2, "usage"},
		{&ssh.Error{Class: ssh.ClassConfig, Err: errors.New("x")}, 2, "usage"},
		{&ssh.Error{Class: ssh.ClassTimeout, Err: errors.New("x")}, 7, "unreachable"},
		{&ssh.Error{Class: ssh.ClassNetwork, Err: errors.New("x")}, 7, "unreachable"},
		{&ssh.Error{Class: ssh.ClassTrustRequired, Err: errors.New("x")}, 4, "trust_required"},
		{&ssh.Error{Class: ssh.ClassHostKey, Err: errors.New("x")}, 5, "host_key_changed"},
		{&ssh.Error{Class: ssh.ClassAuth, Err: errors.New("x")}, 6, "auth_failed"},
		{&ssh.Error{Class: ssh.ClassUnknown, Err: errors.New("x")}, 1, "error"},
		{&PartialError{Failed: 1, Total: 2}, 3, "partial"},
		{&state.LockedError{Path: "p"}, 11, "locked"},
		{&state.ConflictError{Kind: "host", Name: "a"}, 10, "conflict"},
		{&state.StaleClaimError{Kind: "task", Name: "a"}, 10, "conflict"},
		{&state.ClaimedError{Kind: "task", Name: "a"}, 10, "conflict"},
		{&state.OpenError{Dir: "p", Err: &state.SchemaError{Path: "p", Found: 9}}, 1, "error"},
		{&profiles.ConflictError{Key: "K", Origins: []string{"a", "b"}}, 10, "conflict"},
		{ErrInterrupted, 130, "interrupted"},
		{context.Canceled, 130, "interrupted"},
		{&ExitCodeError{Code: 42, JSON: "error"}, 42, "error"},
		{errors.New("plain"), 1, "error"},
	}
	for _, c := range cases {
		for _, err := range []error{c.err, fmt.Errorf("wrapped: %w", c.err)} {
			got := Classify(err)
			if got.Exit != c.exit || got.Code != c.code {
				t.Errorf("%T %v: got %d/%s, want %d/%s", c.err, err, got.Exit, got.Code, c.exit, c.code)
			}
		}
	}
	if Classify(nil).Exit != 0 {
		t.Error("nil must be exit 0")
	}
}
