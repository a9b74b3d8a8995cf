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
