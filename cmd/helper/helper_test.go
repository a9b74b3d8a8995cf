package helper

import (
	"slices"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdFetch(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdFetch, "fetch", "--platform", "linux/amd64", "--platform", "darwin/arm64", "--from", "dist")
	if !slices.Equal(o.Platforms, []string{"linux/amd64", "darwin/arm64"}) || o.From != "dist" || o.Settings == nil {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdFetch, "fetch", "linux/amd64")
}

func TestNewCmdPrune(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdPrune, "prune", "--host", "prod", "--dry-run")
	if o.Host != "prod" || !o.DryRun || o.Executor == nil {
		t.Fatalf("parsed %+v", o)
	}
	o = cmdtest.Parsed(t, NewCmdPrune, "prune", "--host=prod")
	if o.Host != "prod" || o.DryRun {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdPrune, "prune")
	cmdtest.Refused(t, NewCmdPrune, "prune", "prod")
}
