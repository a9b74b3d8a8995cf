package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// runArgs runs one command line in process and returns its exit code and
// error stream.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errb := cmdutil.Test()
	code := run(context.Background(), ios, append([]string{}, args...))
	return code, out.String(), errb.String()
}

// walk calls fn on every command of the tree below the root.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	for _, sub := range c.Commands() {
		fn(sub)
		walk(sub, fn)
	}
}

// path is the command line that reaches c.
func path(c *cobra.Command) []string {
	return strings.Fields(verbOf(c))
}

func verbOf(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name())
}

// takesArgs reports whether c's usage line names a required argument
// ("show ID", "exec ID -- CMD..."), not only flags or optional ones.
func takesArgs(c *cobra.Command) bool {
	for _, w := range strings.Fields(c.Use)[1:] {
		if !strings.HasPrefix(w, "[") && !strings.HasPrefix(w, "-") {
			return true
		}
	}
	return false
}

// Every command of the tree, hidden ones too: an unknown subcommand, a
// missing argument and extra arguments are usage errors (exit 2, "usage"
// in the envelope); a noun alone prints its help. Today's main printed
// help and exited 0 for `host bogus`, and exited 1 for `task show`.
func TestEveryCommandRefusesBadArgumentsAsUsage(t *testing.T) {
	t.Setenv("KANDEV_EXEC_STATE_DIR", t.TempDir())
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	checkUsage := func(args ...string) {
		t.Helper()
		code, out, errs := runArgs(t, append(args, "--json")...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, `{"error":{"code":"usage"`) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one usage envelope", args, code, out, errs)
		}
	}
	checkUsage("frobnicate")
	seen := 0
	walk(root, func(c *cobra.Command) {
		seen++
		p := path(c)
		if c.Args == nil {
			t.Errorf("%q has no argument check: cobra would accept anything", p)
		}
		if c.HasSubCommands() {
			checkUsage(append(p, "bogus")...)
			if code, out, _ := runArgs(t, p...); code != 0 || !strings.Contains(out, "Usage:") {
				t.Errorf("%q alone: exit %d, want its help and 0:\n%s", p, code, out)
			}
			return
		}
		if c.Name() != "test" || c.Parent().Name() != "host" { // host test takes any number of names
			checkUsage(append(p, "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8")...)
		}
		if takesArgs(c) {
			checkUsage(p...)
		}
	})
	if seen < 30 {
		t.Fatalf("walked only %d commands", seen)
	}
}

// `--json` anywhere before `--` asks for the envelope, even after the bad
// flag that stopped flag parsing; a --json that is another flag's value
// or part of a remote command does not.
func TestJSONAfterABadFlag(t *testing.T) {
	t.Setenv("KANDEV_EXEC_STATE_DIR", t.TempDir())
	code, out, errs := runArgs(t, "host", "ls", "--nope", "--json")
	if code != 2 || out != "" || errs != `{"error":{"code":"usage","message":"unknown flag: --nope","hint":"`+"`kandev-exec host ls --help`"+` lists its flags"}}`+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	launch, _, err := root.Find([]string{"task", "launch"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"task", "launch", "--bogus", "--json"}, true},
		{[]string{"task", "launch", "--json=true", "--bogus"}, true},
		{[]string{"task", "launch", "--json", "--json=false"}, false},
		{[]string{"task", "launch", "--name", "--json", "--bogus"}, false},
		{[]string{"task", "launch", "--profile", "p", "--", "agent", "--json"}, false},
		{[]string{"task", "launch", "--follow", "--json"}, true},
		{[]string{"task", "launch", "--bogus", "--template", "{{.}}"}, true},
	} {
		if got := cmdutil.WantsJSON(launch, c.args); got != c.want {
			t.Errorf("%q: WantsJSON %v, want %v", c.args, got, c.want)
		}
	}
}

// `help exit-codes --json` is the table Classify draws from, row for row.
func TestHelpExitCodesIsTheTable(t *testing.T) {
	code, out, errs := runArgs(t, "help", "exit-codes", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []struct {
		Code    int    `json:"code"`
		Name    string `json:"name"`
		Meaning string `json:"meaning"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cmdutil.ExitCodes) {
		t.Fatalf("%d rows, the table has %d", len(rows), len(cmdutil.ExitCodes))
	}
	for i, e := range cmdutil.ExitCodes {
		if rows[i].Code != e.Status || rows[i].Name != e.Code || rows[i].Meaning != e.Meaning {
			t.Errorf("row %d: %+v, table %+v", i, rows[i], e)
		}
	}
	if code, _, _ := runArgs(t, "help", "host", "bogus"); code != 2 {
		t.Errorf("help host bogus: exit %d, want 2", code)
	}
}

// A transcript that expects a failure says which one: `exits N CMD`.
// `! exec` only stands for a background command the transcript kills
// itself, which has no exit status to assert.
func TestTranscriptsAssertExitCodes(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
				break // the archive's files start here
			}
			if strings.HasPrefix(strings.TrimSpace(line), "! exec ") && !strings.HasSuffix(strings.TrimSpace(line), "&") {
				t.Errorf("%s:%d: `! exec` accepts any failure; assert the code with `exits N`", file, i+1)
			}
		}
	}
}
