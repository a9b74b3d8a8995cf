package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Data flows one way (docs/architecture.md): cmd -> executor -> the
// rest; the live view reads records and the store only; what runs on a
// host knows nothing of the local side. These rules are checked on the
// import declarations of every non-test file, so a shortcut fails here
// before review.

const module = "github.com/kdlbs/kandev-exec/"

// allowedImports: the packages of the module each one below the executor
// may import. The host side (controller, taskdir, reclaim, hostops, the
// helper binary) never reaches the store, the vault, profiles or ssh; the
// live view (tui) only records and the store.
var allowedImports = map[string][]string{
	"controller":             {"internal/fsx", "internal/redact", "taskdir"},
	"taskdir":                {"internal/fsx", "internal/redact"},
	"reclaim":                {"internal/fsx", "taskdir"},
	"internal/hostops":       {"controller", "taskdir", "reclaim", "internal/buildinfo", "internal/fsx", "internal/redact"},
	"internal/fsx":           nil,
	"internal/redact":        nil,
	"internal/buildinfo":     nil,
	"internal/helperbin":     {"internal/buildinfo", "internal/fsx"},
	"cmd/kandev-exec-helper": {"internal/hostops"},
	"tui":                    {"records", "state", "internal/fsx", "internal/termsafe"},
	"internal/termsafe":      nil,
	"records":                {"state", "profiles", "internal/fsx", "internal/crashpoint"},
	"internal/crashpoint":    nil,
	"state":                  {"state/statetest", "internal/fsx"},
	"profiles":               {"internal/suggest"},
	"internal/suggest":       nil,
	"ssh":                    nil,
	"vault":                  {"state", "records", "profiles", "internal/fsx"},
	"internal/sshtest":       nil,
	"state/statetest":        {"state"},
}

func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok {
				out[dir] = append(out[dir], rest)
			}
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportDirection(t *testing.T) {
	imports := moduleImports(t)
	for dir, deps := range imports {
		for _, dep := range deps {
			top := strings.SplitN(dir, "/", 2)[0]
			switch {
			case dep == "cmd" || strings.HasPrefix(dep, "cmd/"):
				if top != "cmd" && dir != "." {
					t.Errorf("%s imports %s: nothing below cmd may", dir, dep)
				}
			case dep == "executor":
				if top != "cmd" {
					t.Errorf("%s imports executor: only cmd may", dir)
				}
			}
			if allowed, ruled := allowedImports[dir]; ruled && !contains(allowed, dep) {
				t.Errorf("%s imports %s; it may import only %v of the module", dir, dep, allowed)
			}
		}
	}
	for dir := range allowedImports {
		if _, ok := imports[dir]; !ok {
			t.Errorf("rule for %s, which has no Go files: update the rules", dir)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
