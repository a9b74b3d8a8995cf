package profiles

import (
	"errors"
	"slices"
	"strings"
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
	failed := Preflight(entries, func(r Ref) (string, error) {
		asked = append(asked, r)
		if r.Name == "good" {
			return "a-long-value", nil
		}
		return "", errors.New(r.Name + " is missing")
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

// A revealed value shorter than redact.MinLen is marked Unmasked: it will
// show as it is in the agent's log, and the launch warns naming its key.
func TestPreflightMarksShortValues(t *testing.T) {
	values := map[string]string{"short": "abc", "floor": "abcd", "empty": ""}
	var defs []Definition
	for _, name := range []string{"short", "floor", "empty"} {
		defs = append(defs, Definition{Key: strings.ToUpper(name), Origin: OriginExecutorProfile, Ref: Ref{RefSecret, name}})
	}
	defs = append(defs, Definition{Key: "LIT", Origin: OriginExecutorProfile, Literal: "a"})
	entries, err := Explain(defs)
	if err != nil {
		t.Fatal(err)
	}
	Preflight(entries, func(r Ref) (string, error) { return values[r.Name], nil })
	if got := UnmaskedKeys(entries); !slices.Equal(got, []string{"SHORT"}) {
		t.Fatalf("UnmaskedKeys = %q, want [SHORT] (a literal is never masked, an empty value shows nothing)", got)
	}
	for _, e := range entries {
		if e.Secret && e.Value != redact.Mask {
			t.Errorf("%s: value %q, want %q whatever its length", e.Key, e.Value, redact.Mask)
		}
	}
}
