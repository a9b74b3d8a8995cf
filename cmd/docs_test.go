package cmd

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/task"
	"github.com/kdlbs/kandev-exec/cmd/watch"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/vault"
)

// The parts of docs/ that restate the code are generated from it, between
// markers, and checked here: a command, flag, exit code, JSON field or
// profile key added without its documentation fails this test. Regenerate
// with:
//
//	go test ./cmd -run TestDocsAreGenerated -update
var update = flag.Bool("update", false, "rewrite the generated sections of docs/")

var generated = regexp.MustCompile(`(?s)(<!-- BEGIN GENERATED: ([a-z-]+) -->\n).*?(<!-- END GENERATED -->)`)

func TestDocsAreGenerated(t *testing.T) {
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	sections := map[string]string{
		"global-flags":    globalFlagsDoc(),
		"commands":        commandsDoc(root),
		"exit-codes":      exitCodesDoc(),
		"json":            jsonDoc(),
		"profile-keys":    fieldsDoc(profiles.ProfileFields),
		"agent-keys":      fieldsDoc(profiles.AgentFields),
		"profile-example": "```yaml\n" + profiles.ExampleProfile + "```\n",
		"agent-example":   "```yaml\n" + profiles.ExampleAgent + "```\n",
	}
	used := map[string]bool{}
	for _, file := range []string{"../docs/contract.md", "../docs/profiles.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		out := generated.ReplaceAllStringFunc(string(b), func(m string) string {
			parts := generated.FindStringSubmatch(m)
			body, ok := sections[parts[2]]
			if !ok {
				missing = append(missing, parts[2])
				return m
			}
			used[parts[2]] = true
			return parts[1] + body + parts[3]
		})
		if len(missing) > 0 {
			t.Errorf("%s: unknown generated sections %q", file, missing)
		}
		switch {
		case out == string(b):
		case *update:
			if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s is out of date: run `go test ./cmd -run TestDocsAreGenerated -update`", file)
		}
	}
	for name := range sections {
		if !used[name] {
			t.Errorf("no document has the generated section %q", name)
		}
	}
}

func globalFlagsDoc() string {
	var b strings.Builder
	b.WriteString("| flag | environment | config file | default | meaning |\n|---|---|---|---|---|\n")
	for _, s := range cmdutil.GlobalSettings {
		if s.Hidden {
			continue
		}
		fileKey := ""
		if s.InFile {
			fileKey = "`" + s.Key + "`"
		}
		env := ""
		if s.Env != "" {
			env = "`" + s.Env + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", s.Key, env, fileKey, cell(s.Default), cell(s.Doc))
	}
	return b.String()
}

// commandsDoc lists every command people type: its usage line, what it
// does, and its own flags.
func commandsDoc(root *cobra.Command) string {
	var b strings.Builder
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			if sub.Runnable() && !sub.HasSubCommands() {
				fmt.Fprintf(&b, "### `%s`\n\n%s.\n", strings.TrimSuffix(sub.UseLine(), " [flags]"), sub.Short)
				flags := localFlags(sub)
				if len(flags) > 0 {
					b.WriteString("\n| flag | meaning |\n|---|---|\n")
					for _, f := range flags {
						b.WriteString(f)
					}
				}
				b.WriteString("\n")
			}
			visit(sub)
		}
	}
	visit(root)
	return b.String()
}

func localFlags(c *cobra.Command) []string {
	var out []string
	c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden || fl.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(fl)
		spec := "`--" + fl.Name
		if fl.Shorthand != "" {
			spec = "`-" + fl.Shorthand + "`, " + spec
		}
		if name != "" && name != "bool" {
			spec += " " + name
		}
		spec += "`"
		if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0" && fl.DefValue != "[]" && fl.DefValue != "0s" {
			usage += " (default " + fl.DefValue + ")"
		}
		out = append(out, fmt.Sprintf("| %s | %s |\n", spec, cell(usage)))
	})
	sort.Strings(out)
	return out
}

func exitCodesDoc() string {
	var b strings.Builder
	b.WriteString("| code | JSON code | meaning |\n|---|---|---|\n")
	for _, e := range cmdutil.ExitCodes {
		code := ""
		if e.Code != "" {
			code = "`" + e.Code + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", e.Status, code, cell(e.Meaning))
	}
	return b.String()
}

// jsonObjects are the documents commands print with --json, by the
// commands that print them.
var jsonObjects = []struct {
	name, commands string
	v              any
}{
	{"host", "`host add`, `host set`, `host show`, `host drain` once complete (`host ls`: an array)", executor.HostView{}},
	{"host status change", "`host cordon`, `host uncordon`, `host quarantine`, `host readmit` (the host's fields, then these)", executor.HostStatusChange{}},
	{"retained task", "`host readmit`, in `retained` (an empty array for the other status changes)", executor.RetainedTask{}},
	{"host test row", "`host test` (an array, one per host)", executor.TestResult{}},
	{"host trust", "`host trust`", executor.TrustResult{}},
	{"host disconnect", "`host disconnect`", executor.DisconnectResult{}},
	{"task", "`task show` (`task ls`: an array; `task launch`: `{\"task\", \"session\", \"reused\"}`; `task resume`: `{\"task\", \"session\"}`)", task.View{}},
	{"task cleanup job", "`task show` and `task ls`, in `job`", task.JobView{}},
	{"teardown result", "`task archive`, `task delete`", executor.TeardownResult{}},
	{"sweep row", "`sweep` (an array, one per job it ran or that failed)", executor.SweepResult{}},
	{"helper prune row", "`helper prune` (an array, one per helper version, or per root that failed)", executor.HelperPruneRow{}},
	{"reclaim row", "`reclaim` (an array, one per directory, or per host or root that failed)", executor.ReclaimRow{}},
	{"watch event", "`watch` (one compact object a line; `task archive`/`task delete`/`host drain` with `--watch` and without a terminal)", watch.Line{}},
	{"session", "`session show`, `session stop`, `session logs`, `session wait`, `task wait` (`session ls`: an array)", executor.SessionView{}},
	{"environment entry", "`profile env` (an array, one per key)", profiles.ExplainEntry{}},
	{"apply result", "`profile apply`, `agent apply`", executor.ApplyResult{}},
	{"secret", "`secret ls` (an array)", vault.Secret{}},
	{"doctor check", "`doctor` (an array)", executor.Check{}},
	{"version", "`version`", VersionInfo{}},
	{"setting", "`help config` (an array)", cmdutil.Setting{}},
	{"profile key", "`help profile` (`{\"profile\", \"profile_example\", \"agent\", \"agent_example\"}`)", profiles.Field{}},
}

func jsonDoc() string {
	var b strings.Builder
	for _, o := range jsonObjects {
		fmt.Fprintf(&b, "#### %s\n\nPrinted by %s.\n\n| field | type |\n|---|---|\n", o.name, o.commands)
		for _, f := range jsonFields(reflect.TypeOf(o.v)) {
			b.WriteString(f)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// jsonFields lists the fields encoding/json writes for t, embedded
// structs flattened, as table rows.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		typ := jsonType(f.Type)
		if strings.Contains(opts, "omitempty") {
			typ += ", omitted when empty"
		}
		out = append(out, fmt.Sprintf("| `%s` | %s |\n", name, typ))
	}
	return out
}

func jsonType(t reflect.Type) string {
	switch t.String() {
	case "time.Time":
		return "string (RFC 3339, UTC)"
	case "json.RawMessage":
		return "object"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem()) + " or null"
	case reflect.Slice:
		return "array of " + jsonType(t.Elem())
	case reflect.Map:
		return "object"
	case reflect.Struct:
		return "object"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Int32, reflect.Uint32:
		return "integer"
	case reflect.Interface:
		return "any"
	}
	return t.Kind().String()
}

func fieldsDoc(fields []profiles.Field) string {
	var b strings.Builder
	b.WriteString("| key | type | default | example |\n|---|---|---|---|\n")
	for _, f := range fields {
		def := f.Default
		if f.Required {
			def = "required"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` |\n", f.Key, cell(f.Type), cell(def), f.Example)
	}
	b.WriteString("\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "- **`%s`**: %s\n", f.Key, f.Doc)
	}
	return b.String()
}

// cell keeps a table cell on one line and its pipes literal.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// outside matches a pointer at documents that are not part of the
// repository: the design notes and contract it was built from.
var outside = regexp.MustCompile(`DESIGN\.md|CONTRACT\.md|STYLE\.md|\.\./shared|/work/shared|\bspecs/[a-z-]+\.md`)

// Comments and documents point at docs/, never at files outside the
// repository a reader of the code does not have.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if path == filepath.Join("..", "cmd", "docs_test.go") || !textFile(path) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if outside.MatchString(line) {
				t.Errorf("%s:%d points outside the repository (use docs/): %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func textFile(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".md", ".txtar", ".sh", ".yaml", ".yml", ".txt":
		return true
	}
	return filepath.Base(path) == "Makefile"
}

// mdLink is a relative link of a Markdown document: [text](target#anchor).
var mdLink = regexp.MustCompile(`\]\(([^)#: ]+)(#[^) ]+)?\)`)

// Every relative link in the README and docs/ reaches a file, and every
// anchor a heading of it.
func TestDocLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	for _, file := range append(files, "../README.md") {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(filepath.Dir(file), m[1])
			tb, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s: link to %s: %v", file, m[1], err)
				continue
			}
			if m[2] != "" && !hasAnchor(string(tb), m[2][1:]) {
				t.Errorf("%s: link to %s%s: no such heading", file, m[1], m[2])
			}
		}
	}
}

// hasAnchor reports whether doc has a heading whose GitHub anchor is a.
func hasAnchor(doc, a string) bool {
	for _, line := range strings.Split(doc, "\n") {
		h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			case r == ' ':
				return '-'
			}
			return -1
		}, h)
		if slug == a {
			return true
		}
	}
	return false
}
