package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// uploadFixture is a real sshd that runs with umask 077, so a helper that
// is not chmod'ed explicitly would come out 0700.
type uploadFixture struct {
	srv    *sshtest.Server
	target *sshconfig.Target
	inst   Installer
	root   string
}

func newUploadFixture(t *testing.T, opts ...sshtest.Option) *uploadFixture {
	t.Helper()
	old := syscall.Umask(0o077)
	srv := sshtest.NewServer(t, opts...)
	syscall.Umask(old)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ov := sshconfig.Overrides{Port: srv.Port(), User: srv.User(), IdentityFiles: []string{srv.UserKeyPath}, IdentitiesOnly: true}
	tg, err := sshconfig.Resolve(context.Background(), "127.0.0.1", ov, sshconfig.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	return &uploadFixture{srv: srv, target: tg, inst: testInstaller(t.TempDir()), root: filepath.Join(t.TempDir(), "kandev root")}
}

func (f *uploadFixture) dial(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial(context.Background(), f.target, ssh.DialOptions{Mode: ssh.Record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// localPlatform is this test binary's platform, as NormalizePlatform
// names it.
var localPlatform = runtime.GOOS + "/" + runtime.GOARCH

// locateHelpers is where the tests' installers find helpers.
var locateHelpers = sync.OnceValue(helperbin.Default)

// testInstaller keeps its upload locks in locks.
func testInstaller(locks string) Installer {
	return Installer{Helpers: func() *helperbin.Locator { return locateHelpers() }, LocksDir: func() (string, error) { return locks, nil }}
}

// buildCLI builds the CLI, which serves a host of its own platform when
// no helper is found.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kandev-exec")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "../..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestEnsureHelperUploadsOnceThenCached(t *testing.T) {
	f := newUploadFixture(t)
	bin := helpertest.Build(t)
	helpertest.UseHelper(t, &locateHelpers, bin)
	c := f.dial(t)
	ctx := context.Background()

	var progress [][2]int64
	h, uploaded, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil, func(sent, total int64) { progress = append(progress, [2]int64{sent, total}) })
	if err != nil || !uploaded {
		t.Fatalf("first EnsureHelper = %+v, %v, %v", h, uploaded, err)
	}
	remote := h.path()
	if want := filepath.Join(f.root, "bin", helpertest.SHA256(t, bin), "kandev-exec"); remote != want {
		t.Fatalf("path = %s, want %s", remote, want)
	}
	helpertest.SameContent(t, bin, remote)
	fi, err := os.Stat(remote)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode = %v under umask 077, want 0700", fi.Mode().Perm())
	}
	// Progress counts the compressed bytes: from none to all of them,
	// fewer than the binary's, and the bytes between as they go, however
	// fast the link.
	raw := fi.Size()
	if n := len(progress); n < 2 || progress[0][0] != 0 || progress[n-1][0] != progress[n-1][1] || progress[n-1][1] >= raw {
		t.Fatalf("progress = %v for a %d-byte helper", progress, raw)
	}
	between := 0
	for i, p := range progress[1:] {
		if p[0] < progress[i][0] {
			t.Fatalf("progress goes back: %v", progress)
		}
		if p[0] > 0 && p[0] < p[1] {
			between++
		}
	}
	if between < progressSteps/2 {
		t.Fatalf("progress = %v: %d reports between none and all, want %d or more", progress, between, progressSteps/2)
	}

	again, uploaded, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
	if err != nil || uploaded || again != h {
		t.Fatalf("second EnsureHelper = %q, %v, %v", again, uploaded, err)
	}
	fi2, err := os.Stat(remote)
	if err != nil || !fi2.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, fi2) {
		t.Fatalf("cached helper was rewritten: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(remote)); len(entries) != 1 {
		t.Fatalf("leftovers beside the helper: %v", entries)
	}
}

// A bootstrap that found the helper missing stands for the check before
// the upload's lock: on a cold host the upload is then two commands, the
// check under the lock and the upload, which verifies what arrived. A
// cached copy it reported is checked again, with its handshake.
func TestEnsureHelperAfterDetectChecksOnce(t *testing.T) {
	f := newUploadFixture(t, sshtest.WithLogLevel("DEBUG1"))
	bin := helpertest.Build(t)
	helpertest.UseHelper(t, &locateHelpers, bin)
	c := f.dial(t)
	ctx := context.Background()
	commands := func(mark int) int { return strings.Count(f.srv.Log()[mark:], "Starting session: command") }
	sha := helpertest.SHA256(t, bin)
	info, err := Detect(ctx, c, f.root, sha, localPlatform)
	if err != nil || info.Helper == nil || info.Helper.cached {
		t.Fatalf("detect on a cold host: %+v, %v", info, err)
	}
	mark := len(f.srv.Log())
	h, uploaded, err := f.inst.Ensure(ctx, c, info.Root, localPlatform, info.Helper)
	if err != nil || !uploaded {
		t.Fatalf("Ensure after detect: %+v, %v, %v", h, uploaded, err)
	}
	helpertest.SameContent(t, bin, h.path())
	if n := commands(mark); n != 2 {
		t.Fatalf("Ensure after a detect that found no helper ran %d commands, want 2 (the check under the lock, the upload)", n)
	}
	if info, err = Detect(ctx, c, f.root, sha, localPlatform); err != nil || !info.Helper.Usable() {
		t.Fatalf("detect once uploaded: %+v, %v", info, err)
	}
	mark = len(f.srv.Log())
	if again, uploaded, err := f.inst.Ensure(ctx, c, info.Root, localPlatform, info.Helper); err != nil || uploaded || again != h {
		t.Fatalf("Ensure of a cached helper: %+v, %v, %v", again, uploaded, err)
	}
	if n := commands(mark); n != 1 {
		t.Fatalf("Ensure after a detect that found it cached ran %d commands, want 1 (the check)", n)
	}
}

// A host without gzip gets the helper uncompressed over SFTP, checked
// and installed the same way: the whole binary goes out (progress counts
// it), and nothing is left beside it.
func TestEnsureHelperWithoutGzipGoesOverSFTP(t *testing.T) {
	f := newUploadFixture(t, sshtest.WithoutCommands("gzip"))
	bin := helpertest.Build(t)
	helpertest.UseHelper(t, &locateHelpers, bin)
	c := f.dial(t)
	var progress [][2]int64
	h, uploaded, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil, func(sent, total int64) { progress = append(progress, [2]int64{sent, total}) })
	if err != nil || !uploaded {
		t.Fatalf("EnsureHelper = %+v, %v, %v", h, uploaded, err)
	}
	helpertest.SameContent(t, bin, h.path())
	fi, err := os.Stat(h.path())
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("installed helper: %v, %v", fi, err)
	}
	if n := len(progress); n < 2 || progress[n-1][0] != fi.Size() || progress[n-1][1] != fi.Size() {
		t.Fatalf("progress = %v for a %d-byte helper sent whole", progress, fi.Size())
	}
	if entries, _ := os.ReadDir(filepath.Dir(h.path())); len(entries) != 1 {
		t.Fatalf("leftovers beside the helper: %v", entries)
	}
	if _, uploaded, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil); err != nil || uploaded {
		t.Fatalf("second EnsureHelper: uploaded %v, %v", uploaded, err)
	}
}

func TestEnsureHelperReplacesCorruptCopy(t *testing.T) {
	f := newUploadFixture(t)
	bin := helpertest.Build(t)
	helpertest.UseHelper(t, &locateHelpers, bin)
	c := f.dial(t)
	ctx := context.Background()
	h, _, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
	if err != nil {
		t.Fatal(err)
	}
	remote := h.path()
	for name, damage := range map[string]func() error{
		"bytes overwritten": func() error { return os.WriteFile(remote, []byte("truncated"), 0o755) },
		"not executable":    func() error { return os.Chmod(remote, 0o644) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		got, uploaded, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
		if err != nil || !uploaded || got != h {
			t.Fatalf("%s: EnsureHelper = %+v, %v, %v", name, got, uploaded, err)
		}
		helpertest.SameContent(t, bin, remote)
		if fi, err := os.Stat(remote); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v", name, fi.Mode(), err)
		}
	}
}

// Twelve launches on one host, each on its own connection, upload once.
func TestEnsureHelperConcurrentUploadsOnce(t *testing.T) {
	f := newUploadFixture(t)
	bin := helpertest.Build(t)
	helpertest.UseHelper(t, &locateHelpers, bin)
	const n = 12
	clients := make([]*ssh.Client, n)
	for i := range clients {
		clients[i] = f.dial(t)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		uploads  int
		paths    = map[string]bool{}
		failures []error
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, up, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
			}
			if up {
				uploads++
			}
			paths[p.path()] = true
		}()
	}
	wg.Wait()
	if len(failures) > 0 || uploads != 1 || len(paths) != 1 {
		t.Fatalf("uploads = %d, paths = %v, errors = %v", uploads, paths, failures)
	}
	for p := range paths {
		helpertest.SameContent(t, bin, p)
	}
}

func TestEnsureHelperUnsupportedPlatform(t *testing.T) {
	_, uploaded, err := testInstaller(t.TempDir()).Ensure(context.Background(), nil, "~/.kandev", "freebsd/amd64", nil)
	want := `unsupported remote platform "freebsd/amd64" — kandev-exec supports linux/{amd64,arm64} and darwin/{amd64,arm64}`
	var upe *helperbin.UnsupportedPlatformError
	if uploaded || err == nil || err.Error() != want || !errors.As(err, &upe) {
		t.Fatalf("error = %v", err)
	}
}

// A dead connection is an error, never "needs upload".
func TestEnsureHelperTransportFailure(t *testing.T) {
	f := newUploadFixture(t)
	helpertest.UseHelper(t, &locateHelpers, helpertest.Build(t))
	c := f.dial(t)
	c.Close()
	remote, uploaded, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil)
	if err == nil || uploaded || remote != (Helper{}) {
		t.Fatalf("EnsureHelper on a closed client = %+v, %v, %v", remote, uploaded, err)
	}
	if _, err := os.Stat(f.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("root exists after a failed check: %v", err)
	}
}

// Another platform's helper comes from beside the binary, else the
// cache; with neither, the error names `helper fetch`. (The loopback
// host runs this platform: the copies are this platform's helper under
// the other's name, so the handshake can run.)
func TestEnsureHelperOtherPlatformSources(t *testing.T) {
	f := newUploadFixture(t)
	other := "linux/arm64"
	if localPlatform == other {
		other = "linux/amd64"
	}
	helper := helpertest.Build(t)
	exeDir, cache := t.TempDir(), t.TempDir()
	helpertest.UseLocator(t, &locateHelpers, &helperbin.Locator{Executable: filepath.Join(exeDir, "kandev-exec"), CacheDir: cache, Version: "1.2.3"})
	c := f.dial(t)
	ctx := context.Background()

	_, _, err := f.inst.Ensure(ctx, c, f.root, other, nil)
	var me *helperbin.MissingError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "run `kandev-exec helper fetch --platform "+other+"`") {
		t.Fatalf("no helper for %s: %v", other, err)
	}
	b, err := os.ReadFile(helper)
	if err != nil {
		t.Fatal(err)
	}
	for i, dir := range []string{cache, exeDir} {
		// Each copy differs by a trailing byte, so each has its own sha256.
		p := filepath.Join(dir, helperbin.Name(other))
		if err := os.WriteFile(p, append(b, byte(i)), 0o755); err != nil {
			t.Fatal(err)
		}
		h, uploaded, err := f.inst.Ensure(ctx, c, f.root, other, nil)
		if err != nil || !uploaded || h.path() != filepath.Join(f.root, "bin", helpertest.SHA256(t, p), "kandev-exec") {
			t.Fatalf("with %s: %+v, %v, %v", p, h, uploaded, err)
		}
		helpertest.SameContent(t, p, h.path())
	}
}

// A helper of another protocol (a stale copy kept for this platform) is
// refused, uploaded or cached, and the next source replaces it; with no
// other source the error says why and names `helper fetch`.
func TestEnsureHelperProtocolMismatchReplaced(t *testing.T) {
	f := newUploadFixture(t)
	stale := helpertest.BuildSpeaking(t, 99)
	good := helpertest.Build(t)
	exeDir, cache := filepath.Dir(stale), t.TempDir()
	gz, err := (helperbin.Helper{Path: good}).Compressed()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, helperbin.Name(localPlatform)+".gz"), gz, 0o600); err != nil {
		t.Fatal(err)
	}
	staleSHA, goodSHA := helpertest.SHA256(t, stale), helpertest.SHA256(t, good)
	c := f.dial(t)
	ctx := context.Background()

	// Only the stale one: refused after upload, never installed.
	helpertest.UseLocator(t, &locateHelpers, &helperbin.Locator{Executable: filepath.Join(exeDir, "kandev-exec"), Version: "1.2.3"})
	_, uploaded, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
	var me *helperbin.MissingError
	if !errors.As(err, &me) || uploaded || !strings.Contains(err.Error(), fmt.Sprintf("it speaks protocol 99, this kandev-exec speaks %d", protocol.Protocol())) ||
		!strings.Contains(err.Error(), stale) || !strings.Contains(err.Error(), "helper fetch --platform "+localPlatform) {
		t.Fatalf("stale helper alone: %v, %v", uploaded, err)
	}
	if entries, err := os.ReadDir(filepath.Join(f.root, "bin", staleSHA)); err != nil || len(entries) != 0 {
		t.Fatalf("stale helper left on the host: %v, %v", entries, err)
	}

	// Beside the CLI (stale) then the cache (good): the good one replaces it.
	helpertest.UseLocator(t, &locateHelpers, &helperbin.Locator{Executable: filepath.Join(exeDir, "kandev-exec"), CacheDir: cache, Version: "1.2.3"})
	h, uploaded, err := f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
	if err != nil || !uploaded || h.sha != goodSHA {
		t.Fatalf("stale beside, good in cache: %+v, %v, %v", h, uploaded, err)
	}
	helpertest.SameContent(t, good, h.path())

	// The stale one already cached on the host (by an older CLI) is
	// refused there too, and the good one is used.
	planted := filepath.Join(f.root, "bin", staleSHA, HelperName)
	b, _ := os.ReadFile(stale)
	if err := os.WriteFile(planted, b, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := checkHelper(ctx, c, f.root, staleSHA)
	var pe *protocolError
	if err != nil || !st.cached || !errors.As(st.hello, &pe) || pe.theirs != 99 {
		t.Fatalf("check of the stale copy: %+v, %v", st, err)
	}
	h, uploaded, err = f.inst.Ensure(ctx, c, f.root, localPlatform, nil)
	if err != nil || uploaded || h.sha != goodSHA {
		t.Fatalf("stale cached on the host: %+v, %v, %v", h, uploaded, err)
	}
}

// The CLI itself is the last resort for a host of its own platform: it
// answers the handshake and the helper's operations too.
func TestEnsureHelperCLIItself(t *testing.T) {
	f := newUploadFixture(t)
	cli := buildCLI(t)
	helpertest.UseLocator(t, &locateHelpers, &helperbin.Locator{Executable: cli, Version: "dev"})
	c := f.dial(t)
	h, uploaded, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil)
	if err != nil || !uploaded || h.sha != helpertest.SHA256(t, cli) {
		t.Fatalf("EnsureHelper = %+v, %v, %v", h, uploaded, err)
	}
	var vi protocol.VersionInfo
	if err := runHelperOp(t, c, h, protocol.OpVersion, nil, &vi); err != nil || vi.Protocol != protocol.Protocol() {
		t.Fatalf("version = %+v, %v", vi, err)
	}
}

// runHelperOp runs one helper request on the host, the way launches do.
func runHelperOp(t *testing.T, c *ssh.Client, helper Helper, op string, req, res any) error {
	t.Helper()
	return Call(context.Background(), c, "test host", helper, op, req, res)
}

// The uploaded helper prepares a task directory on the host from JSON on
// stdin, and runs a script with a secret that only reaches it there.
func TestHelperEndToEnd(t *testing.T) {
	f := newUploadFixture(t)
	helpertest.UseHelper(t, &locateHelpers, helpertest.Build(t))
	c := f.dial(t)
	helper, uploaded, err := f.inst.Ensure(context.Background(), c, f.root, localPlatform, nil)
	if err != nil || !uploaded {
		t.Fatalf("EnsureHelper = %+v, %v, %v", helper, uploaded, err)
	}
	bare, head := helpertest.GitRepo(t)
	req := taskdir.PrepareRequest{
		Root:         f.root,
		TaskDir:      "fix-flaky-test",
		Owner:        taskdir.Owner{InstallationID: "inst", TaskID: "task-1", OperationID: "op-1"},
		Repositories: []taskdir.Repository{{Name: "app", URL: bare}},
		TaskBranch:   "kandev/fix-flaky-test",
		BaseBranch:   "main",
	}
	var res taskdir.PrepareResult
	if err := runHelperOp(t, c, helper, protocol.OpPrepare, req, &res); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, "tasks", "fix-flaky-test")
	if res.TaskDirAbs != dir || res.Head != head || res.Branch != req.TaskBranch || !res.Created {
		t.Fatalf("prepare = %+v", res)
	}

	req.Owner.TaskID = "task-2"
	err = runHelperOp(t, c, helper, protocol.OpPrepare, req, &res)
	var he *Error
	if !errors.As(err, &he) || he.Code != taskdir.CodeOwnerMismatch {
		t.Fatalf("other task's prepare: %v", err)
	}

	var run taskdir.RunScriptResult
	script := taskdir.RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: `echo "using $TOKEN in $(pwd)"; exit 3`,
		Env: map[string]string{"TOKEN": "hunter2"}, Redact: []string{"hunter2"}}
	if err := runHelperOp(t, c, helper, protocol.OpRunScript, script, &run); err != nil {
		t.Fatal(err)
	}
	if run.ExitCode != 3 || run.OutputTail != "using *** in "+dir+"\n" {
		t.Fatalf("run-script = %+v", run)
	}
}

// The handshake's answer: this protocol, another one, or no answer a
// helper of this protocol family would give (an old binary's usage text).
func TestParseHello(t *testing.T) {
	ok := fmt.Sprintf(`{"commit":"c","ok":true,"platform":"linux/amd64","protocol":%d,"version":"v"} `, protocol.Protocol())
	if err := parseHello(ok); err != nil {
		t.Fatalf("this protocol: %v", err)
	}
	var pe *protocolError
	other := `{"error":{"code":"protocol_mismatch","message":"this helper speaks protocol 99","protocol":99},"ok":false} `
	if err := parseHello(other); !errors.As(err, &pe) || pe.theirs != 99 ||
		err.Error() != fmt.Sprintf("it speaks protocol 99, this kandev-exec speaks %d", protocol.Protocol()) {
		t.Fatalf("protocol 99: %v", err)
	}
	if err := parseHello("usage: kandev-exec [command] "); !errors.As(err, &pe) || pe.theirs != 0 ||
		!strings.Contains(err.Error(), `does not answer protocol`) || !strings.Contains(err.Error(), `usage: kandev-exec [command]`) {
		t.Fatalf("no handshake: %v", err)
	}
}
