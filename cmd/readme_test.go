package cmd

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/profiles"
)

// The README shows the example profile exactly as `help profile` does,
// and a row for every global setting with its environment twin and
// config file key.
func TestReadmeShowsTheExampleAndEverySetting(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme, "```yaml\n"+profiles.ExampleProfile+"```") {
		t.Error("README.md does not show profiles.ExampleProfile verbatim in a yaml block")
	}
	// Every profile the README shows is one apply would take.
	for i, block := range strings.Split(readme, "```yaml\n")[1:] {
		doc, _, _ := strings.Cut(block, "```")
		p, err := profiles.DecodeProfile(fmt.Sprintf("README.md yaml block %d", i+1), []byte(doc))
		if err == nil {
			err = p.CheckLaunchable()
		}
		if err != nil {
			t.Error(err)
		}
	}
	for _, s := range cmdutil.GlobalSettings {
		row := "| `--" + s.Key
		if s.FileOnly {
			row = "| (no flag) `" + s.Key + "`"
		}
		i := strings.Index(readme, row)
		if i < 0 {
			t.Errorf("README.md has no settings row for %s", s.Key)
			continue
		}
		line, _, _ := strings.Cut(readme[i:], "\n")
		fileKey := ""
		if s.InFile {
			fileKey = "`" + s.Key + "`"
		}
		cells := strings.Split(line, "|")
		if len(cells) != 5 || strings.TrimSpace(cells[2]) != wrapTicks(s.Env) || strings.TrimSpace(cells[3]) != fileKey {
			t.Errorf("README.md row for --%s: %q; want environment %q, config file key %q", s.Key, line, s.Env, fileKey)
		}
	}
}

func wrapTicks(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// What the README tells operators to type is what the release uses: the
// release key for verifying a download by hand, with its fingerprint,
// and the packages' crontab line for the scheduled sweep.
func TestReadmeShowsTheReleaseKeyAndTheSweepSchedule(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(helperbin.ReleaseKey))
	if err != nil {
		t.Fatal(err)
	}
	signer := helperbin.ReleaseNamespace + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	for _, want := range []string{"echo '" + signer + "' > allowed_signers", ssh.FingerprintSHA256(key),
		"-I " + helperbin.ReleaseNamespace + " -n " + helperbin.ReleaseNamespace + " -s " + helperbin.SignatureFile} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	cron, err := os.ReadFile("../packaging/kandev-exec-sweep.cron")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cron)), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.Contains(readme, "\n"+line+"\n") {
			t.Errorf("README.md does not show the crontab line %q", line)
		}
	}
}
