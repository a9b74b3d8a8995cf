package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/internal/sshsig"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/taskdir"
	"github.com/kdlbs/kandev-exec/vault"
)

// typedErrors is one value of every exported error type of the module,
// with the exit code and JSON code docs/contract.md gives it. Errors that
// wrap others appear once per class of what they wrap.
var typedErrors = []struct {
	err  error
	exit int
	code string
}{
	// cmd/cmdutil
	{FlagErrorf("x"), 2, "usage"},
	{&ConfigError{File: "c.yaml", Line: 1, Msg: "x"}, 2, "usage"},
	{WithHint(errors.New("x"), "h"), 1, "error"},
	{&PartialError{Failed: 1, Total: 2, What: "hosts"}, 3, "partial"},
	{&ExitCodeError{Code: 42, JSON: "error"}, 42, "error"},
	{&ExitCodeError{Code: 255}, 255, "error"},
	{ErrInterrupted, 130, "interrupted"},
	{context.Canceled, 130, "interrupted"},
	{errors.New("plain"), 1, "error"},

	// ssh
	{&sshconfig.ConfigError{Msg: "x"}, 2, "usage"},
	{&ssh.Error{Class: ssh.ClassConfig, Err: errors.New("x")}, 2, "usage"},
	{&ssh.Error{Class: ssh.ClassTimeout, Err: errors.New("x")}, 7, "unreachable"},
	{&ssh.Error{Class: ssh.ClassNetwork, Err: errors.New("x")}, 7, "unreachable"},
	{&ssh.Error{Class: ssh.ClassTrustRequired, Err: errors.New("x")}, 4, "trust_required"},
	{&ssh.Error{Class: ssh.ClassHostKey, Err: errors.New("x")}, 5, "host_key_changed"},
	{&ssh.Error{Class: ssh.ClassAuth, Err: errors.New("x")}, 6, "auth_failed"},
	{&ssh.Error{Class: ssh.ClassUnknown, Err: errors.New("x")}, 1, "error"},
	{&ssh.TrustRequiredError{Observed: ssh.Pin{KeyType: "ssh-ed25519", Fingerprint: "SHA256:x"}}, 4, "trust_required"},
	{&ssh.HostKeyChangedError{}, 5, "host_key_changed"},
	{&ssh.HostCertError{CA: "SHA256:ca", Reason: "expired"}, 5, "host_key_changed"},
	{&ssh.HandshakeClosedError{Addr: "h:22", Err: io.EOF}, 7, "unreachable"},
	{&ssh.ProxyCommandError{Hop: "h", Err: io.EOF}, 7, "unreachable"},
	{&ssh.ForwardingRefusedError{Host: "h", Reason: "open failed"}, 1, "error"},
	{&ssh.SessionLimitError{Host: "h", Open: 1, Err: io.EOF}, 1, "error"},
	{&remote.NoexecError{Host: "h", Root: "/r", Mount: "/r"}, 1, "error"},
	{&ssh.PassphraseKeyError{Path: "k"}, 6, "auth_failed"},
	{&ssh.NoIdentitiesError{Tried: []string{"k"}}, 6, "auth_failed"},
	{&ssh.LostError{Host: "h"}, 7, "unreachable"},
	{&ssh.ExitError{Code: 3}, 1, "error"},

	// state
	{&state.NotFoundError{Kind: "host", Name: "a"}, 1, "error"},
	{&state.ConflictError{Kind: "host", Name: "a"}, 10, "conflict"},
	{&state.StaleClaimError{Kind: "task", Name: "a"}, 10, "conflict"},
	{&state.ClaimedError{Kind: "task", Name: "a"}, 10, "conflict"},
	{&state.LockedError{Path: "p"}, 11, "locked"},
	{&state.ContendedError{Store: "etcd://h:2379/p", Op: "update host a", Attempts: 3}, 11, "locked"},
	{&state.UnreachableError{Store: "etcd://h:2379/p", Op: "get host a", Err: context.DeadlineExceeded}, 7, "unreachable"},
	{&state.UnreachableError{Store: "etcd://h:2379/p", Op: "update host a", Unknown: true}, 7, "unreachable"},
	{&state.AuthError{Store: "etcd://h:2379/p", User: "u", Err: errors.New("x")}, 6, "auth_failed"},
	{&state.UnsafePathError{Path: "p", Reason: "is a symbolic link"}, 1, "error"},
	{&state.SchemaError{Path: "p", Found: 9}, 1, "error"},
	{&state.OpenError{Dir: "p", Err: &state.SchemaError{Path: "p", Found: 9}}, 1, "error"},
	{&state.OpenError{Dir: "p", Err: &state.UnsafePathError{Path: "p", Reason: "is not a directory"}}, 1, "error"},
	{&state.OpenError{Dir: "etcd://h:2379/p", Err: errors.New("CA file: no such file")}, 1, "error"},

	// profiles
	{&profiles.DecodeError{File: "f", Line: 1, Msg: "x"}, 2, "usage"},
	{&profiles.ConflictError{Key: "K", Origins: []string{"a", "b"}}, 10, "conflict"},
	{&profiles.SecretError{Key: "K", Origin: "o", Err: errors.New("x")}, 1, "error"},

	// executor, and the helper's errors as the executor wraps them
	{&executor.RefusedError{Host: "h", Status: "cordoned"}, 9, "refused"},
	{&executor.HostStatusError{Host: "h", Status: "quarantined", Asked: "uncordon"}, 9, "refused"},
	{&executor.InUseError{What: "host", Name: "h"}, 1, "error"},
	{&executor.FingerprintMismatchError{Want: "SHA256:x"}, 5, "host_key_changed"},
	{&executor.ActiveSessionError{TaskID: "t", SessionID: "s"}, 10, "conflict"},
	{&executor.TaskBusyError{TaskID: "t", Doing: "worked on"}, 10, "conflict"},
	{&executor.PendingError{TaskID: "t", Host: "h", Drain: "unreachable", Err: "x"}, 8, "pending"},
	{&executor.HostDrainPendingError{Host: "h", WorkerPID: 42, Log: "l"}, 8, "pending"},
	{&executor.NameTakenError{Name: "n", TaskID: "t"}, 10, "conflict"},
	{&executor.KeptError{TaskID: "t", Host: "h", Reason: "dirty_worktree"}, 3, "partial"},
	{&executor.OrphanError{TaskID: "t", SessionID: "s"}, 10, "conflict"},
	{&executor.KeyConflictError{Key: "k", TaskID: "t"}, 10, "conflict"},
	{&executor.KeyPendingError{Key: "k", TaskID: "t"}, 8, "pending"},
	{&executor.WaitTimeoutError{SessionID: "s", Timeout: time.Second}, 8, "pending"},
	{&executor.NoTokenError{SessionID: "s", PID: 7}, 1, "error"},
	{&records.AmbiguousError{What: "task", Prefix: "t"}, 2, "usage"},
	{&executor.HostExistsError{Name: "h", Differ: []string{"--port"}}, 1, "error"},
	{&executor.UsageError{Msg: "x"}, 2, "usage"},
	{&records.NameError{Kind: "host", Name: "a b"}, 2, "usage"},
	{&vault.ValueError{Name: "tok", Problem: "the value is empty"}, 2, "usage"},
	{&records.NotFoundError{What: "host", Name: "h", ListCmd: "host ls"}, 1, "error"},
	{&executor.NotStartedError{S: &records.Session{ID: "s"}}, 1, "error"},
	{&executor.LogPositionError{SessionID: "s", Want: "1-a", Have: "2-b"}, 10, "conflict"},
	// The controller's refusals of a log position reach the CLI as a
	// LogPositionError, which names the session.
	{&controller.GenerationError{Want: "1-a", Have: "2-b"}, 1, "error"},
	{&controller.OffsetError{Offset: 9, Generation: "1-a"}, 1, "error"},
	{&executor.PrepareScriptError{ExitCode: 3}, 1, "error"},
	{&helperbin.UnsupportedPlatformError{Platform: "plan9/386"}, 1, "error"},
	{&helperbin.MissingError{Platform: "linux/arm64", Looked: []string{"d"}}, 1, "error"},
	{&helperbin.ChecksumError{File: "f", Got: "a", Want: "b"}, 1, "error"},
	{&helperbin.DevBuildError{Version: "dev"}, 1, "error"},
	// A release whose checksums are unsigned or signed by another key is
	// refused like one whose sums do not match: nothing to retry.
	{&helperbin.UnsignedError{Checksums: "checksums.txt"}, 1, "error"},
	{&helperbin.SignatureError{Signature: "checksums.txt.sig", Err: errors.New("x")}, 1, "error"},
	{&sshsig.WrongKeyError{Got: "SHA256:a", Want: "SHA256:b"}, 1, "error"},
	{&executor.LaunchError{Err: errors.New("x")}, 1, "error"},
	{&executor.LaunchError{Err: &ssh.Error{Class: ssh.ClassTimeout, Err: errors.New("x")}}, 7, "unreachable"},
	{&executor.LaunchError{Err: &executor.ActiveSessionError{}}, 10, "conflict"},
	{&executor.InterruptedError{Step: executor.StepPrepareScript, Stopped: true}, 130, "interrupted"},
	{&remote.Error{Code: taskdir.CodeBadRequest}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeUnsafePath}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeOwnerMismatch}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeOriginMismatch}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeProgramMissing}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeGitFailed}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeVerifyFailed}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeTimeout}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeIO}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeUnsafeCheckout}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeBusy}, 1, "error"},
	{&remote.Error{Code: taskdir.CodeNotPrivate}, 1, "error"},
	{&remote.Error{Code: protocol.CodeProtocol}, 1, "error"},
	{&taskdir.Error{Code: taskdir.CodeBadRequest}, 1, "error"},
	{&protocol.Error{Code: protocol.CodeIO}, 1, "error"},
	{&remote.HostPathError{Host: "h", OwnershipError: &fsx.OwnershipError{Path: "/srv/k", Reason: fsx.ReasonOwner}}, 1, "error"},
	{&executor.TaskDirGoneError{TaskID: "t1", Host: "h", Dir: "/srv/k/tasks/t1", Phase: records.PhaseReady}, 1, "error"},
	{&fsx.OwnershipError{Path: "/srv/k", Reason: fsx.ReasonWritable}, 1, "error"},
	{&fsx.TooLargeError{Path: "p", Limit: 1}, 1, "error"},
	{&state.CorruptRecordError{Kind: "host", Name: "a"}, 1, "error"},
	{&records.TransitionError{What: "task", ID: "t", From: "absent", To: "ready"}, 10, "conflict"},
}

// Every typed error lands on docs/contract.md's exit code and JSON code, bare,
// wrapped, and under a hint; and only on a row `help exit-codes` prints.
func TestEveryTypedErrorThroughTheTable(t *testing.T) {
	listed := map[ExitInfo]bool{}
	for _, e := range ExitCodes {
		listed[ExitInfo{Exit: e.Status, Code: e.Code}] = true
	}
	for _, c := range typedErrors {
		for _, err := range []error{c.err, fmt.Errorf("wrapped: %w", c.err), WithHint(c.err, "h")} {
			got := Classify(err)
			if got.Exit != c.exit || got.Code != c.code {
				t.Errorf("%T %v: got %d/%s, want %d/%s", c.err, err, got.Exit, got.Code, c.exit, c.code)
			}
		}
		var ec *ExitCodeError
		if got := Classify(c.err); !errors.As(c.err, &ec) && !listed[ExitInfo{Exit: got.Exit, Code: got.Code}] {
			t.Errorf("%T: %d/%s is not a row of help exit-codes", c.err, got.Exit, got.Code)
		}
	}
	if Classify(nil).Exit != 0 {
		t.Error("nil must be exit 0")
	}
	for _, r := range exitRules {
		if !listed[ExitInfo{Exit: r.exit.Status, Code: r.exit.Code}] {
			t.Errorf("rule to %+v: not a row of help exit-codes", r.exit)
		}
	}
}

// typedErrors holds every exported error type the module declares, so a
// new one cannot reach users without a decided exit code. (Unexported
// ones reach the CLI only through what they wrap.)
func TestTypedErrorsCoverTheModule(t *testing.T) {
	have := map[string]bool{}
	for _, c := range typedErrors {
		have[fmt.Sprintf("%T", c.err)] = true
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, name := range errorTypes(f) {
			found++
			if !have[name] && !have[strings.TrimPrefix(name, "*")] {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s (%s) is not in typedErrors: decide its exit code", name, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 30 {
		t.Fatalf("found only %d error types: is the walk broken?", found)
	}
}

// errorTypes lists "*pkg.T" for each exported T with an Error() string
// method declared in f.
func errorTypes(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != "Error" || len(fn.Type.Params.List) != 0 {
			continue
		}
		typ, star := fn.Recv.List[0].Type, ""
		if s, ok := typ.(*ast.StarExpr); ok {
			typ, star = s.X, "*"
		}
		id, ok := typ.(*ast.Ident)
		if ok && id.IsExported() {
			out = append(out, star+f.Name.Name+"."+id.Name)
		}
	}
	return out
}
