package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/ssh"
)

// sum256 prints a file's sha256 with whichever tool the host has.
const sum256 = `sum256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum <"$1"; ` +
	`elif command -v shasum >/dev/null 2>&1; then shasum -a 256 <"$1"; ` +
	`else echo "neither sha256sum nor shasum is installed" >&2; return 127; fi; }
`

// Helper is the helper with sha256 sha under the physical workdir
// root of a host.
type Helper struct {
	root, sha string
}

// SHA256 is the helper's content address: its directory under bin/.
func (h Helper) SHA256() string { return h.sha }

func (h Helper) dir() string  { return path.Join(h.root, "bin", h.sha) }
func (h Helper) path() string { return path.Join(h.dir(), HelperName) }

// HelperState is what a check found of a helper on a host.
type HelperState struct {
	Helper Helper
	cached bool
	hello  error // a cached copy's answer to the handshake: nil, or *protocolError
	gzip   bool  // the host has gzip: an upload travels compressed
}

// Usable is a cached copy that speaks this CLI's protocol.
func (s *HelperState) Usable() bool { return s != nil && s.cached && s.hello == nil }

// checkHelper asks the host, in one round trip, whether a verified copy
// is in place and which protocol it speaks, creating and checking the
// directories on its way. Only the marker lines count: anything else (a
// transport error, a script that died) is an error, never "needs upload".
func checkHelper(ctx context.Context, c *ssh.Client, root, sha string) (HelperState, error) {
	kv, err := runMarked(ctx, c, helperCheckScript(root, sha))
	if err != nil {
		return HelperState{}, fmt.Errorf("check helper on %s: %w", c.Target.Label(), err)
	}
	return parseHelperState(kv, c.Target.Label(), sha)
}

// rootScript makes the workdir root exist (0700, parents too) and checks
// it and every directory above it; it leaves the physical root in $R and
// prints it as root=.
func rootScript(root string) string {
	return HostCheckFuncs + `umask 077
kx_root ` + Word(root) + `
printf 'root=%s\n' "$R"
`
}

// helperCheckScript prints root=, gzip= and state= for the helper with
// sha under root (helperStateScript), and the handshake's hello= for a
// verified copy (run only once its whole path is checked); it ends the
// script, so callers put their own lines before it.
func helperCheckScript(root, sha string) string {
	return sum256 + rootScript(root) + helperStateScript(sha) + helloScript(`"$f"`)
}

// helperStateScript follows rootScript: it creates bin/ and bin/<sha>/
// (0700) and checks them, prints gzip= and state=, and exits unless the
// helper $f is in place, its whole path checked and its sha256 verified.
func helperStateScript(sha string) string {
	return `kx_mkdir "$R/bin"; kx_mkdir "$R/bin/` + sha + `"
if command -v gzip >/dev/null 2>&1; then echo gzip=yes; else echo gzip=no; fi
f=$R/bin/` + sha + `/` + HelperName + `
if [ ! -e "$f" ] && [ ! -L "$f" ]; then
` + noexecProbe + `echo state=missing; exit 0; fi
kx_own "$f" -
if [ ! -x "$f" ]; then echo state=corrupt; exit 0; fi
s=$(sum256 "$f") || exit 1
case $s in ` + sha + `*) ;; *) echo state=corrupt; exit 0 ;; esac
echo state=cached
`
}

// noexecProbe runs a script put where the helper goes (a directory the
// user's alone, checked): one that cannot run there is a filesystem
// mounted noexec, its mount point (as df says it) printed as noexec=,
// before anything is uploaded.
const noexecProbe = `kx_p=${f%/*}/.exec-probe.$$
printf '#!/bin/sh\nexit 0\n' >"$kx_p" && chmod 700 "$kx_p" && { "$kx_p" 2>/dev/null || printf 'noexec=%s\n' "$(df -P "${f%/*}" 2>/dev/null | tail -n 1 | sed 's/.*% //')"; }
rm -f "$kx_p"
`

// detectScript prints the platform and home; the bootstrap of every
// connection that needs the helper starts with it.
const detectScript = `kx_os=$(uname -s) kx_arch=$(uname -m)
printf 'os=%s\narch=%s\nhome=%s\n' "$kx_os" "$kx_arch" "$HOME"
`

// WarmScript is a launch's one command on a host where the helper with
// sha (built for platform) is cached: detect, the workdir root made and
// checked, the helper's whole path checked and its sha256 verified
// (helperStateScript) and then, on a host of that platform, the helper
// exec'd to serve the launch's requests, which wait on stdin meanwhile
// (nothing before the helper reads them). Otherwise it ends after its
// marker lines, and the launch takes the slow path from what they say.
func WarmScript(root, sha, platform string) string {
	return "exec 3<&0 </dev/null\n" + detectScript + sum256 + rootScript(root) + helperStateScript(sha) +
		`case $(printf '%s/%s' "$kx_os" "$kx_arch" | tr '[:upper:]' '[:lower:]') in ` + platformPattern(platform) + `) ;; *) exit 0 ;; esac
echo ` + serveMarker + `
exec "$f" serve <&3 3<&-
`
}

// helloScript runs the protocol handshake on file (a shell word, already
// guarded) and prints its answer, on one line, as hello=; $kx_hello
// keeps it for the script.
func helloScript(file string) string {
	req, err := protocol.EncodeRequest(protocol.OpVersion, nil)
	if err != nil {
		panic(err) // a constant request
	}
	return `kx_hello=$(printf '%s\n' ` + shquote.Quote(string(req)) + ` | ` + file + ` serve 2>&1 | tr '\n' ' ')
printf 'hello=%s\n' "$kx_hello"
`
}

// protocolError is a helper that answered the handshake with another
// protocol, or not at all.
type protocolError struct {
	theirs int    // the helper's protocol; 0 when it did not say
	answer string // what it said, when not a protocol answer
}

func (e *protocolError) Error() string {
	if e.theirs != 0 {
		return fmt.Sprintf("it speaks protocol %d, this kandev-exec speaks %d", e.theirs, protocol.Protocol())
	}
	return fmt.Sprintf("it does not answer protocol %d's handshake (%.120q)", protocol.Protocol(), e.answer)
}

// parseHello reads a handshake answer: nil when the helper speaks this
// protocol.
func parseHello(answer string) error {
	var vi protocol.VersionInfo
	err := protocol.ReadAnswer(strings.NewReader(answer), &vi, nil)
	var he *protocol.Error
	switch {
	case errors.As(err, &he) && he.Code == protocol.CodeProtocol && he.Protocol != 0:
		return &protocolError{theirs: he.Protocol}
	case err != nil:
		return &protocolError{answer: strings.TrimSpace(answer)}
	case vi.Protocol != protocol.Protocol():
		return &protocolError{theirs: vi.Protocol}
	}
	return nil
}

// parseHelperState reads the check's marker lines; only they count.
func parseHelperState(kv map[string]string, host, sha string) (HelperState, error) {
	r, err := physicalRoot(kv, host)
	if err != nil {
		return HelperState{}, err
	}
	st := HelperState{Helper: Helper{root: r, sha: sha}, cached: kv["state"] == "cached", gzip: kv["gzip"] != "no"}
	if s := kv["state"]; s != "cached" && s != "missing" && s != "corrupt" {
		return HelperState{}, fmt.Errorf("check helper on %s: unexpected state %q", host, s)
	}
	if mount, ok := kv["noexec"]; ok {
		return HelperState{}, &NoexecError{Host: host, Root: r, Mount: mount}
	}
	if st.cached {
		st.hello = parseHello(kv["hello"])
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

// Info is what a bootstrap's one round trip learns before anything is
// written on the host.
type Info struct {
	Platform string
	Home     string
	Root     string       // the workdir root, physical (no symlinks), checked
	Helper   *HelperState // set when the host has the platform of the helper checked
}

// Detect learns the platform and home, makes the workdir root exist and
// checks it and every directory above it (hostcheck.go) and, in the same
// round trip, whether the helper with sha, built for platform, is in
// place; with sha "" no helper is checked.
func Detect(ctx context.Context, c *ssh.Client, root, sha, platform string) (Info, error) {
	script := detectScript
	if sha != "" {
		script += helperCheckScript(root, sha)
	} else {
		script += rootScript(root)
	}
	kv, err := runMarked(ctx, c, script)
	if err != nil {
		return Info{}, err
	}
	return Detected(kv, c.Target.Label(), sha, platform)
}

// Detected reads a bootstrap's marker lines (Detect's, or WarmScript's
// through Conversation.KV): platform, home, the physical workdir root
// and, on a host of platform, the state of the helper with sha (built
// for it).
func Detected(kv map[string]string, host, sha, platform string) (Info, error) {
	if kv["home"] == "" {
		return Info{}, errors.New("remote $HOME is empty")
	}
	info := Info{Platform: NormalizePlatform(kv["os"], kv["arch"]), Home: kv["home"]}
	var err error
	if info.Root, err = physicalRoot(kv, host); err != nil {
		return Info{}, err
	}
	if st, err := parseHelperState(kv, host, sha); err == nil && sha != "" && info.Platform == platform {
		info.Helper = &st
	}
	return info, nil
}

// runMarked runs a bootstrap script and reads its key=value lines; a
// path the script refused is a *HostPathError.
func runMarked(ctx context.Context, c *ssh.Client, script string) (map[string]string, error) {
	return runMarkedInput(ctx, c, script, nil, ProbeTimeout)
}

// runMarkedInput is runMarked with stdin and its own time bound.
func runMarkedInput(ctx context.Context, c *ssh.Client, script string, stdin io.Reader, bound time.Duration) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	out, stderr, err := c.Run(ctx, script, stdin)
	kv := Markers(out)
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

// Markers reads the key=value lines of a bootstrap's output.
func Markers(out []byte) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// refused is the *HostPathError of a script that exited RefusedExit.
func refused(host string, err error, kv map[string]string) error {
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.Signal == "" && ee.Code == RefusedExit {
		return Refusal(host, kv)
	}
	return nil
}
