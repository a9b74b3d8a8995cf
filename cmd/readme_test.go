package cmd

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
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
