package controller

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The controller and taskdir run inside the helper on the remote host:
// of this module they may import only each other's host side and the
// shared primitives, which in turn import nothing of it.
func TestHostSideImportsNoLocalSide(t *testing.T) {
	const module = "github.com/kdlbs/kandev-exec/"
	allowed := map[string][]string{
		".":                    {"taskdir", "internal/ascii", "internal/fsx", "internal/loophttp", "internal/procstat", "internal/redact"},
		"../taskdir":           {"internal/ascii", "internal/fsx", "internal/gitsafe", "internal/redact"},
		"../internal/gitsafe":  nil,
		"../internal/ascii":    nil,
		"../internal/fsx":      {"internal/shquote"},
		"../internal/shquote":  nil,
		"../internal/redact":   nil,
		"../internal/loophttp": nil,
		"../internal/procstat": nil,
	}
	for dir, ok := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, mine := strings.CutPrefix(path, module); mine && !slices.Contains(ok, rest) {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}
