package cmd

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
)

// version reports the commit the build was stamped with (it printed ""
// whenever Go recorded no VCS revision, as with -buildvcs=false).
func TestVersionReportsTheStampedCommit(t *testing.T) {
	old := buildinfo.Commit
	buildinfo.Commit = "0123456789abcdef0123456789abcdef01234567"
	t.Cleanup(func() { buildinfo.Commit = old })

	code, out, errs := runArgs(t, "version", "--json")
	var info VersionInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("version --json: exit %d\n%s%s", code, out, errs)
	}
	if info.Commit != buildinfo.Commit || info.Version != buildinfo.Version || info.Platform == "" {
		t.Fatalf("version --json: %+v", info)
	}
	if code, out, _ := runArgs(t, "version"); code != 0 || !strings.Contains(out, ", commit 0123456789ab)") {
		t.Fatalf("version: %q", out)
	}
}

// The builds stamp the version and the commit where both binaries read
// them (internal/buildinfo), not a variable of this package.
func TestReleaseBuildsStampVersionAndCommit(t *testing.T) {
	for _, file := range []string{"../Makefile", "../.goreleaser.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{"-X github.com/kdlbs/kandev-exec/internal/buildinfo.Version=", "-X github.com/kdlbs/kandev-exec/internal/buildinfo.Commit="} {
			if !strings.Contains(s, want) {
				t.Errorf("%s does not set %s", file, want)
			}
		}
		if strings.Contains(s, "cmd.version") {
			t.Errorf("%s still sets cmd.version", file)
		}
	}
}

func TestNewCmdVersion(t *testing.T) {
	if o := cmdtest.Parsed(t, newCmdVersion, "version", "--json"); !o.JSON || o.Version != "test" || o.Commit != buildinfo.CommitID() {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, newCmdVersion, "version", "now")
}
