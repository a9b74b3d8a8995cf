package host

import (
	"context"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// Only the flags given become changes; an empty value is a change (it
// clears the override), an absent flag is not.
func TestNewCmdSetTakesOnlyGivenFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	var got *SetOptions
	c := NewCmdSet(cmdutil.NewFactory(ios, "test"), func(_ context.Context, o *SetOptions) error {
		got = o
		return nil
	})
	c.SetArgs([]string{"prod", "--port", "0", "--hostname", "", "--identity-file", "", "--identities-only=false"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	ch := got.Changes
	if got.Name != "prod" || ch.Port == nil || *ch.Port != 0 || ch.HostName == nil || *ch.HostName != "" ||
		ch.IdentityFiles == nil || len(*ch.IdentityFiles) != 0 || ch.IdentitiesOnly == nil || *ch.IdentitiesOnly {
		t.Fatalf("given flags: %+v", ch)
	}
	if ch.Alias != nil || ch.User != nil || ch.ProxyJump != nil || ch.WorkdirRoot != nil {
		t.Fatalf("flags not given became changes: %+v", ch)
	}
}
