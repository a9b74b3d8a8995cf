package records

import (
	"reflect"
	"testing"
)

func TestReclaimProofMethods(t *testing.T) {
	p := &ReclaimProof{Checkouts: []CheckoutProof{
		{Commits: []CommitProof{{Method: "squash"}, {Method: "ancestor"}}},
		{Commits: []CommitProof{{Method: "squash"}, {Method: "patch-id"}}},
	}}
	if got := p.Methods(); !reflect.DeepEqual(got, []string{"ancestor", "patch-id", "squash"}) {
		t.Fatalf("methods = %q", got)
	}
	if got := (&ReclaimProof{}).Methods(); got != nil {
		t.Fatalf("no commits: methods = %q", got)
	}
}
