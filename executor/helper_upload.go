package executor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/pkg/sftp"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/ssh"
)

// helperName is the helper's file name inside <root>/bin/<sha256>/.
const helperName = "kandev-exec"

// localExecutable finds the CLI's own binary; tests point it at a real
// build, since a test binary is not the CLI.
var localExecutable = os.Executable

// UnsupportedPlatformError is a host whose os/arch has no helper build.
type UnsupportedPlatformError struct{ Platform string }

func (e *UnsupportedPlatformError) Error() string {
	return fmt.Sprintf("unsupported remote platform %q — kandev-exec supports linux/{amd64,arm64} and darwin/{amd64,arm64}", e.Platform)
}

// EnsureHelper makes <root>/bin/<sha256>/kandev-exec exist and verified on
// the host; uploaded reports whether it had to upload. root is the
// physical workdir root the bootstrap reported (detect), platform the
// probe's normalised "os/arch".
//
// The fast path is one round trip. Otherwise a local lock per host and
// binary serialises concurrent launches, and the check is repeated under
// it, so a host gets at most one upload from this machine. uploading, if
// given, is called just before an upload starts (progress output).
func (e *Executor) EnsureHelper(ctx context.Context, c *ssh.Client, root, platform string, uploading ...func()) (h remoteHelper, uploaded bool, err error) {
	if !supportedPlatforms[platform] {
		return h, false, &UnsupportedPlatformError{Platform: platform}
	}
	local, err := localHelper(platform)
	if err != nil {
		return h, false, err
	}
	sha, err := fileSHA256(local)
	if err != nil {
		return h, false, fmt.Errorf("hash helper %s: %w", local, err)
	}
	st, err := checkHelper(ctx, c, root, sha)
	if err != nil || st.cached {
		return st.helper, false, err
	}
	unlock, err := e.lockHelper(ctx, c.Target.Addr(), sha)
	if err != nil {
		return h, false, err
	}
	defer unlock()
	// Another launch may have uploaded it while this one waited.
	if st, err = checkHelper(ctx, c, root, sha); err != nil || st.cached {
		return st.helper, false, err
	}
	for _, f := range uploading {
		f()
	}
	if err := uploadHelper(ctx, c, local, st.helper); err != nil {
		return h, false, fmt.Errorf("upload helper to %s: %w", c.Target.Label(), err)
	}
	return st.helper, true, nil
}

// localHelper is the binary to run on a host of platform: this one when
// the platforms match, else a cross-built one (`make helpers`) beside it
// or in the user cache dir.
func localHelper(platform string) (string, error) {
	exe, err := localExecutable()
	if err != nil {
		return "", fmt.Errorf("locate own binary: %w", err)
	}
	if platform == runtime.GOOS+"/"+runtime.GOARCH {
		return exe, nil
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	name := helperName + "-" + strings.ReplaceAll(platform, "/", "-")
	candidates := []string{filepath.Join(filepath.Dir(exe), name)}
	if cache, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(cache, "kandev-exec", name))
	}
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no kandev-exec helper for %s: looked for %s; run `make helpers` to cross-build it",
		platform, strings.Join(candidates, " and "))
}

// shaCache remembers each helper file's hash while its size and mtime
// stay the same: a launch should not re-read a 20 MB binary.
var shaCache = struct {
	sync.Mutex
	m map[string]shaEntry
}{m: map[string]shaEntry{}}

type shaEntry struct {
	size int64
	mod  time.Time
	sum  string
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	shaCache.Lock()
	defer shaCache.Unlock()
	if e, ok := shaCache.m[p]; ok && e.size == fi.Size() && e.mod.Equal(fi.ModTime()) {
		return e.sum, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	shaCache.m[p] = shaEntry{size: fi.Size(), mod: fi.ModTime(), sum: sum}
	return sum, nil
}

// sum256 prints a file's sha256 with whichever tool the host has.
const sum256 = `sum256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum <"$1"; ` +
	`elif command -v shasum >/dev/null 2>&1; then shasum -a 256 <"$1"; ` +
	`else echo "neither sha256sum nor shasum is installed" >&2; return 127; fi; }
`

// remoteHelper is the helper with sha256 sha under the physical workdir
// root of a host.
type remoteHelper struct {
	root, sha string
}

func (h remoteHelper) dir() string  { return path.Join(h.root, "bin", h.sha) }
func (h remoteHelper) path() string { return path.Join(h.dir(), helperName) }

type helperState struct {
	helper remoteHelper
	cached bool
}

// checkHelper asks the host, in one round trip, whether a verified copy
// is in place, creating and checking the directories on its way. Only the
// marker lines count: anything else (a transport error, a script that
// died) is an error, never "needs upload".
func checkHelper(ctx context.Context, c *ssh.Client, root, sha string) (helperState, error) {
	kv, err := runMarked(ctx, c, helperCheckScript(root, sha))
	if err != nil {
		return helperState{}, fmt.Errorf("check helper on %s: %w", c.Target.Label(), err)
	}
	return parseHelperState(kv, c.Target.Label(), sha)
}

// rootScript makes the workdir root exist (0700, parents too) and checks
// it and every directory above it; it leaves the physical root in $R and
// prints it as root=.
func rootScript(root string) string {
	return hostCheckFuncs + `umask 077
kx_root ` + remoteWord(root) + `
printf 'root=%s\n' "$R"
`
}

// helperCheckScript prints root= and state= for the helper with sha
// under root, creating bin/ and bin/<sha>/ (0700) on its way; it ends the
// script, so callers put their own lines before it.
func helperCheckScript(root, sha string) string {
	return sum256 + rootScript(root) + `kx_mkdir "$R/bin"; kx_mkdir "$R/bin/` + sha + `"
f=$R/bin/` + sha + `/` + helperName + `
if [ ! -e "$f" ] && [ ! -L "$f" ]; then echo state=missing; exit 0; fi
kx_own "$f" -
if [ ! -x "$f" ]; then echo state=corrupt; exit 0; fi
s=$(sum256 "$f") || exit 1
case $s in ` + sha + `*) echo state=cached ;; *) echo state=corrupt ;; esac
`
}

// parseHelperState reads the check's marker lines; only they count.
func parseHelperState(kv map[string]string, host, sha string) (helperState, error) {
	r, err := physicalRoot(kv, host)
	if err != nil {
		return helperState{}, err
	}
	st := helperState{helper: remoteHelper{root: r, sha: sha}, cached: kv["state"] == "cached"}
	if s := kv["state"]; s != "cached" && s != "missing" && s != "corrupt" {
		return helperState{}, fmt.Errorf("check helper on %s: unexpected state %q", host, s)
	}
	return st, nil
}

// physicalRoot is the root= line: absolute, and nothing a later script
// could read as more than one word or line.
func physicalRoot(kv map[string]string, host string) (string, error) {
	r := kv["root"]
	if !path.IsAbs(r) || strings.ContainsFunc(r, unicode.IsControl) {
		return "", fmt.Errorf("check workdir root on %s: no usable absolute path in the reply (%q)", host, r)
	}
	return r, nil
}

// runMarked runs a bootstrap script and reads its key=value lines; a
// path the script refused is a *HostPathError.
func runMarked(ctx context.Context, c *ssh.Client, script string) (map[string]string, error) {
	ctx, cancel := withTimeout(ctx, probeTimeout)
	defer cancel()
	out, stderr, err := c.Run(ctx, script, nil)
	kv := markers(out)
	if err != nil {
		if re := refused(c.Target.Label(), err, kv); re != nil {
			return nil, re
		}
		if msg := strings.TrimSpace(string(stderr)); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return kv, nil
}

func markers(out []byte) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// refused is the *HostPathError of a script that exited refusedExit.
func refused(host string, err error, kv map[string]string) error {
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.Signal == "" && ee.Code == refusedExit {
		return refusal(host, kv)
	}
	return nil
}

// uploadHelper puts local into h's directory (created and checked by
// checkHelper: only the login user can write there) under a unique temp
// name, makes it 0700 whatever the remote umask, verifies its hash on the
// host after checking the path again, and renames it into place
// atomically; the temp file goes on any failure.
func uploadHelper(ctx context.Context, c *ssh.Client, local string, h remoteHelper) (err error) {
	sc, err := sftp.NewClient(c.Client, sftp.UseConcurrentWrites(true))
	if err != nil {
		return fmt.Errorf("start sftp: %w", err)
	}
	defer sc.Close()
	// SFTP calls take no context: closing the client is what ends them.
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	}()
	tmp := path.Join(h.dir(), "."+helperName+".tmp."+rand.Text())
	defer func() {
		if err != nil {
			sc.Remove(tmp)
		}
	}()
	if err := writeRemote(sc, local, tmp); err != nil {
		return err
	}
	if err := sc.Chmod(tmp, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	kv, err := runMarked(ctx, c, sum256+guardScript(h, ssh.ShellQuote(tmp))+`s=$(sum256 `+ssh.ShellQuote(tmp)+`) || exit 1
printf 'sha=%s\n' "${s%% *}"
`)
	if err != nil {
		return fmt.Errorf("verify %s: %w", tmp, err)
	}
	if kv["sha"] != h.sha {
		return fmt.Errorf("verify %s: sha256 on the host is %q, want %s", tmp, kv["sha"], h.sha)
	}
	final := h.path()
	if _, ok := sc.HasExtension("posix-rename@openssh.com"); ok {
		err = sc.PosixRename(tmp, final)
	} else {
		err = replaceRename(sc, tmp, final)
	}
	if err != nil {
		return fmt.Errorf("rename into %s: %w", final, err)
	}
	return nil
}

func writeRemote(sc *sftp.Client, local, remote string) error {
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := sc.OpenFile(remote, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("create %s: %w", remote, err)
	}
	// ReadFrom sees src's size through Stat and writes concurrently.
	_, err = dst.ReadFrom(src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", remote, err)
	}
	return nil
}

// replaceRename is for servers without posix-rename, whose plain rename
// refuses an existing target: whatever is there failed verification (or
// is an identical copy from another machine), so it may go.
func replaceRename(sc *sftp.Client, tmp, final string) error {
	if err := sc.Rename(tmp, final); err == nil {
		return nil
	}
	if err := sc.Remove(final); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return sc.Rename(tmp, final)
}

// helperUploadWait bounds the wait for another upload of the same helper
// to the same host: longer than any upload over a slow link should take.
const helperUploadWait = 10 * time.Minute

// lockHelper takes <state>/locks/helper-<addr>-<sha>.lock, the one lock
// of internal/fsx: it dies with its holder, so a crashed launch never
// leaves a host locked; the wait is bounded and cancellable, and names
// who holds it.
func (e *Executor) lockHelper(ctx context.Context, addr, sha string) (unlock func(), err error) {
	dir, err := e.locksDir()
	if err != nil {
		return nil, err
	}
	name := "helper-" + sanitizeName(addr) + "-" + sha + ".lock"
	l, err := fsx.Acquire(ctx, filepath.Join(dir, name), fsx.LockOptions{What: "helper upload to", Path: addr, Wait: helperUploadWait})
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// sanitizeName keeps a host address usable as part of a file name.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
