package main

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
)

// Data flows one way (docs/architecture.md): cmd -> executor -> the
// rest; the live view reads records and the store only; what runs on a
// host knows nothing of the local side. These rules are checked on the
// import declarations of every non-test file, so a shortcut fails here
// before review.

const module = "github.com/kdlbs/kandev-exec/"

// allowedImports: the packages of the module each package may import.
// Every package has a rule (a new one fails until it gets one), and every
// allowance is used (one left over fails, so the rules say what is true).
// The host side (helper, its protocol, controller, taskdir, reclaim, the
// helper binary) never reaches the store, the vault, profiles or ssh; the
// protocol carries the operations' types and nothing else; the client
// half of the helper (remote) speaks the protocol and is reached over
// ssh, never through the store, and never imports the server; the live
// view (tui) only records and the store; the transport (ssh) dials what
// ssh/sshconfig resolved, ssh/mux shares a connection ssh dialled,
// and sshconfig only reads OpenSSH's configuration. Above them the executor alone combines the store, the
// transport and profiles; cmd/<noun> asks it and prints.
var allowedImports = map[string][]string{
	".": {"cmd"},
	"cmd": {"cmd/agent", "cmd/cmdutil", "cmd/helper", "cmd/host", "cmd/profile", "cmd/reclaim", "cmd/secret",
		"cmd/session", "cmd/store", "cmd/sweep", "cmd/task", "cmd/watch", "executor", "helper", "helper/protocol",
		"internal/buildinfo", "internal/helperbin", "internal/quietterm", "profiles", "state"},
	"cmd/agent":              {"cmd/cmdutil", "cmd/profile", "executor"},
	"cmd/cmdutil":            {"executor", "internal/suggest", "internal/termsafe", "profiles", "records", "ssh", "ssh/sshconfig", "state", "state/etcdstore", "vault"},
	"cmd/helper":             {"cmd/cmdutil", "executor", "internal/helperbin"},
	"cmd/host":               {"cmd/cmdutil", "cmd/hostdrain", "cmd/watch", "executor", "internal/fsx", "records", "state"},
	"cmd/hostdrain":          {"executor", "internal/fsx", "records"},
	"cmd/internal/cmdtest":   {"cmd/cmdutil"},
	"cmd/kandev-exec-helper": {"helper"},
	"cmd/profile":            {"cmd/cmdutil", "executor", "profiles"},
	"cmd/reclaim":            {"cmd/cmdutil", "executor"},
	"cmd/secret":             {"cmd/cmdutil", "executor", "vault"},
	"cmd/session":            {"cmd/cmdutil", "executor", "records"},
	"cmd/store":              {"cmd/cmdutil", "executor", "state"},
	"cmd/sweep":              {"cmd/cmdutil", "executor", "records"},
	"cmd/task":               {"cmd/cmdutil", "cmd/watch", "executor", "records", "ssh"},
	"cmd/watch":              {"cmd/cmdutil", "cmd/hostdrain", "executor", "records", "state", "tui"},
	"executor": {"controller", "helper/protocol", "internal/crashpoint", "internal/fsx", "internal/helperbin",
		"internal/logview", "internal/remote", "internal/shquote", "profiles", "reclaim", "records", "ssh", "ssh/mux", "ssh/sshconfig", "state", "taskdir", "vault"},
	"controller":          {"internal/ascii", "internal/fsx", "internal/loophttp", "internal/procstat", "internal/redact", "taskdir"},
	"taskdir":             {"internal/ascii", "internal/fsx", "internal/gitsafe", "internal/redact"},
	"reclaim":             {"controller", "internal/ascii", "internal/fsx", "internal/gitsafe", "internal/procstat", "internal/shquote", "taskdir"},
	"helper":              {"helper/protocol", "controller", "taskdir", "reclaim", "internal/buildinfo"},
	"helper/protocol":     {"controller"},
	"internal/fsx":        {"internal/shquote"},
	"internal/shquote":    nil,
	"internal/gitsafe":    nil,
	"internal/ascii":      nil,
	"internal/redact":     nil,
	"internal/loophttp":   nil,
	"internal/procstat":   nil,
	"internal/buildinfo":  nil,
	"internal/logview":    nil,
	"internal/helperbin":  {"internal/buildinfo", "internal/fsx", "internal/sshsig"},
	"internal/remote":     {"internal/fsx", "internal/helperbin", "internal/shquote", "helper/protocol", "ssh", "taskdir"},
	"tui":                 {"records", "state", "internal/termsafe"},
	"internal/termsafe":   nil,
	"internal/quietterm":  nil,
	"records":             {"state", "profiles", "internal/crashpoint"},
	"internal/crashpoint": nil,
	"state":               {"internal/fsx", "internal/procstat", "internal/shquote"},
	"state/etcdstore":     {"state"},
	"state/statetest":     {"state"},
	"profiles":            {"internal/suggest", "internal/redact"},
	"internal/suggest":    nil,
	"ssh":                 {"internal/shquote", "ssh/sshconfig"},
	"ssh/sshconfig":       nil,
	"ssh/mux":             {"internal/fsx", "ssh", "ssh/sshconfig"},
	"vault":               {"state", "records", "profiles", "internal/fsx"},
	// The tests' own packages: real servers and terminals, importable by
	// tests only, so nothing of the module behind them.
	"internal/sshtest":    nil,
	"internal/etcdtest":   nil,
	"internal/tmuxtest":   {"internal/procstat"},
	"internal/helpertest": {"internal/helperbin"},
	"internal/bench":      nil,
	// Release signatures: the verifier, and the signer tests make keys with.
	"internal/sshsig":            nil,
	"internal/sshsig/sshsigtest": nil,
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
			case dep == "state/etcdstore":
				// One place opens the store; the rest, doctor included,
				// use the state.Store it opened.
				if dir != "cmd/cmdutil" {
					t.Errorf("%s imports state/etcdstore: only cmd/cmdutil opens a store by its backend", dir)
				}
			case dep == "helper":
				// The server is its mains' alone: a client speaks helper/protocol.
				if dir != "cmd" && dir != "cmd/kandev-exec-helper" {
					t.Errorf("%s imports helper: only the helper's mains (cmd, cmd/kandev-exec-helper) may", dir)
				}
			}
			if allowed, ruled := allowedImports[dir]; ruled && !contains(allowed, dep) {
				t.Errorf("%s imports %s; it may import only %v of the module", dir, dep, allowed)
			}
		}
		if _, ruled := allowedImports[dir]; !ruled {
			t.Errorf("%s has no rule: add what it may import to allowedImports", dir)
		}
	}
	for dir, allowed := range allowedImports {
		deps, ok := imports[dir]
		if !ok {
			t.Errorf("rule for %s, which has no Go files: update the rules", dir)
			continue
		}
		for _, a := range allowed {
			if !contains(deps, a) {
				t.Errorf("%s may import %s but does not: drop the allowance", dir, a)
			}
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

// helperThirdParty: the only packages from outside the standard library
// and this module the helper binary may link. Whatever else it pulls in
// (cobra, viper, bubbletea, lipgloss, the etcd client) is size uploaded to
// every host for nothing.
var helperThirdParty = []string{"golang.org/x/sys/"}

// TestHelperDependencies walks the helper's whole dependency closure, as
// the go tool resolves it for each platform a release ships, and refuses
// any package that is neither standard, of this module, nor allowed above.
func TestHelperDependencies(t *testing.T) {
	const root = module + "cmd/kandev-exec-helper"
	for _, platform := range helperbin.Platforms {
		goos, goarch, _ := strings.Cut(platform, "/")
		t.Run(platform, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps",
				"-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \" \"}}", "./cmd/kandev-exec-helper")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
			}
			imports := map[string][]string{}
			standard := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 2 {
					t.Fatalf("go list line %q: want path, standard, imports", sc.Text())
				}
				imports[fields[0]] = fields[2:]
				standard[fields[0]] = fields[1] == "true"
			}
			if _, ok := imports[root]; !ok {
				t.Fatalf("go list did not list %s:\n%s", root, out)
			}
			for pkg := range imports {
				if slices.Contains(helperUnneeded, pkg) {
					t.Errorf("the helper links %s (%s), which none of its steps needs: it only makes the upload larger",
						pkg, strings.Join(importChain(imports, root, pkg), " -> "))
				}
				if standard[pkg] || strings.HasPrefix(pkg, module) || allowedHelperDep(pkg) {
					continue
				}
				t.Errorf("the helper links %s (%s); it may link only the standard library, this module and %v",
					pkg, strings.Join(importChain(imports, root, pkg), " -> "), helperThirdParty)
			}
		})
	}
}

// helperUnneeded are standard packages no step of the helper needs: a
// regular expression engine (internal/ascii checks its identifiers),
// templates, other encoders, debugging and plugin machinery, and net/http:
// the controller's loopback API speaks internal/loophttp, a fraction of
// its size (docs/architecture.md).
var helperUnneeded = []string{"regexp", "net/http", "net/textproto", "text/template", "html/template", "encoding/xml", "encoding/gob",
	"encoding/csv", "log/slog", "expvar", "net/rpc", "net/smtp", "net/http/pprof", "database/sql", "go/parser",
	"image", "archive/tar", "archive/zip", "testing", "plugin"}

func allowedHelperDep(pkg string) bool {
	for _, prefix := range helperThirdParty {
		if strings.HasPrefix(pkg, prefix) {
			return true
		}
	}
	return false
}

// importChain is a shortest path of imports from root to pkg.
func importChain(imports map[string][]string, root, pkg string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == pkg {
			var chain []string
			for p := pkg; p != ""; p = from[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, next := range imports[cur] {
			if _, seen := from[next]; !seen {
				from[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{root, "?", pkg}
}
