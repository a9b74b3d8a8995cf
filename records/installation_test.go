package records

import (
	"context"
	"testing"
)

// The installation ID is created by the first ask and kept: a later ask
// with another fresh ID gets the stored one.
func TestInstallationIDIsCreatedOnce(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	first, err := InstallationID(ctx, st, "ifirst")
	if err != nil || first != "ifirst" {
		t.Fatalf("first ask: %q, %v", first, err)
	}
	again, err := InstallationID(ctx, st, "isecond")
	if err != nil || again != "ifirst" {
		t.Fatalf("second ask: %q, %v; want the stored ifirst", again, err)
	}
	entries, err := st.Journal(ctx, 0)
	if err != nil || len(entries) != 1 || entries[0].Type != "installation.created" || entries[0].Kind != KindInstallation {
		t.Fatalf("journal: %+v, %v", entries, err)
	}
}
