package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// manDir holds the man pages: kandev-exec.1 and one page per command,
// generated from the command tree by cobra's doc generator and shipped
// in the release archives and packages. A command or flag changed
// without its page fails this test. Regenerate with `make man`, which
// runs:
//
//	go test ./cmd -run TestManPages -update
const manDir = "../man"

func TestManPages(t *testing.T) {
	want := manPages(t)
	if *update {
		old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
		for _, p := range old {
			if _, ok := want[filepath.Base(p)]; !ok {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, page := range want {
			if err := os.WriteFile(filepath.Join(manDir, name), page, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var got []string
	files, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	for _, p := range files {
		name := filepath.Base(p)
		got = append(got, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if page, ok := want[name]; !ok {
			t.Errorf("man/%s: no such command any more", name)
		} else if !bytes.Equal(b, page) {
			t.Errorf("man/%s is out of date", name)
		}
	}
	for name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("man/%s is missing", name)
		}
	}
	if t.Failed() {
		t.Log("run `make man` to regenerate man/")
	}
}

// The pages cover every command people type but help (whose topics are
// in docs/), and the root's page is kandev-exec.1.
func TestManPagesCoverTheCommands(t *testing.T) {
	pages := manPages(t)
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		if _, ok := pages[name]; !ok {
			t.Errorf("no page %s for %q", name, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" {
				visit(sub)
			}
		}
	}
	visit(root)
	if th := `.TH "KANDEV-EXEC" "1" "" "kandev-exec" "kandev-exec Manual"`; !bytes.Contains(pages["kandev-exec.1"], []byte("\n"+th+"\n")) {
		t.Fatalf("kandev-exec.1 has no line %s:\n%s", th, pages["kandev-exec.1"])
	}
}

// thDate is the date field of a page's .TH line.
var thDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

// manPages renders the page of every available command, by file name.
// The pages carry no date: one would change them from day to day with
// nothing else changed.
func manPages(t *testing.T) map[string][]byte {
	t.Helper()
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	out := map[string][]byte{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return
		}
		c.DisableAutoGenTag = true
		var b bytes.Buffer
		date := time.Time{}
		header := &doc.GenManHeader{Section: "1", Date: &date, Source: "kandev-exec", Manual: "kandev-exec Manual"}
		if err := doc.GenMan(c, header, &b); err != nil {
			t.Fatalf("%s: %v", c.CommandPath(), err)
		}
		out[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = thDate.ReplaceAll(b.Bytes(), []byte(`$1""`))
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	return out
}
