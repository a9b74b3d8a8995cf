package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The store is written by the executor alone (docs/architecture.md): cmd
// asks it and prints. storeWrites names every call of the store's API,
// and of records' choke points above it, that changes what is stored.
var storeWrites = map[string][]string{
	"state":           {"Create", "Update", "Delete", "Discard", "Txn", "AcquireClaim", "Checkpoint", "RenewClaim", "ReleaseClaim", "CreateClaimed", "KeepClaim", "Copy"},
	"state/etcdstore": {"Create", "Update", "Delete", "Discard", "Txn", "AcquireClaim", "Checkpoint", "RenewClaim", "ReleaseClaim", "CreateClaimed"},
	"records":         {"Create", "CreateClaimed", "Acquire", "Checkpoint", "Mutate", "MutateEvent", "InstallationID"},
}

// TestCmdNeverWritesTheStore type-checks every cmd package (against the
// export data the go tool builds) and refuses any call that resolves to
// one of storeWrites, whether a function or a method of an interface the
// store implements.
func TestCmdNeverWritesTheStore(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	list := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	exports := map[string]string{}
	for _, line := range list("-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./cmd/...") {
		path, file, _ := strings.Cut(line, "\t")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f := exports[path]; f != "" {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	writes := map[string]bool{}
	for pkg, names := range storeWrites {
		for _, n := range names {
			writes[module+pkg+"."+n] = true
		}
	}
	for _, line := range list("-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./cmd/...") {
		f := strings.Split(line, "\t")
		path, dir, names := f[0], f[1], strings.Fields(f[2])
		var files []*ast.File
		for _, n := range names {
			file, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, file)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(path, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", path, err)
		}
		for _, file := range files {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := ast.Unparen(call.Fun)
				if ix, ok := fn.(*ast.IndexExpr); ok { // a generic function given its type
					fn = ix.X
				}
				sel, ok := fn.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				obj := info.Uses[sel.Sel]
				if s := info.Selections[sel]; s != nil {
					obj = s.Obj()
				}
				if obj == nil || obj.Pkg() == nil {
					return true
				}
				if name := obj.Pkg().Path() + "." + obj.Name(); writes[name] {
					t.Errorf("%s: cmd calls %s, which writes the store: ask the executor to", fset.Position(call.Pos()), strings.TrimPrefix(name, module))
				}
				return true
			})
		}
	}
}
