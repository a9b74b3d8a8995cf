package profiles

import (
	"errors"
	"slices"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/redact"
)

// Preflight asks only about references, marks the ones that fail with the
// check's words, and leaves literals and good references resolved.
func TestPreflightMarksUnresolvable(t *testing.T) {
	defs := []Definition{
		{Key: "LIT", Origin: OriginExecutorProfile, Literal: "x"},
		{Key: "GOOD", Origin: OriginExecutorProfile, Ref: Ref{RefSecret, "good"}},
		{Key: "BAD", Origin: OriginExecutorProfile, Ref: Ref{RefSecret, "bad"}},
		{Key: "ENV", Origin: OriginAgentProfile, Ref: Ref{RefFromEnv, "NOPE"}},
	}
	entries, err := Explain(defs)
	if err != nil {
		t.Fatal(err)
	}
	var asked []Ref
	failed := Preflight(entries, func(r Ref) error {
		asked = append(asked, r)
		if r.Name == "good" {
			return nil
		}
		return errors.New(r.Name + " is missing")
	})
	if !slices.Equal(failed, []string{"BAD", "ENV"}) {
		t.Fatalf("failed = %q", failed)
	}
	if len(asked) != 3 {
		t.Fatalf("checked %d references, want 3 (never a literal)", len(asked))
	}
	for _, e := range entries {
		wantOK := e.Key == "LIT" || e.Key == "GOOD"
		if e.Resolved != wantOK || (e.Problem == "") != wantOK {
			t.Errorf("%s: resolved %v, problem %q", e.Key, e.Resolved, e.Problem)
		}
		if e.Key == "BAD" && e.Problem != "bad is missing" {
			t.Errorf("BAD problem %q", e.Problem)
		}
		if e.Secret && e.Value != redact.Mask {
			t.Errorf("%s: value %q not masked", e.Key, e.Value)
		}
	}
}
