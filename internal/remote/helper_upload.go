package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/ssh"
)

// HelperName is the helper's file name inside <root>/bin/<sha256>/.
const HelperName = "kandev-exec"

// Installer puts the helper in place on hosts. Its caller says where the
// local helpers come from and where the per-host upload locks live.
type Installer struct {
	// Helpers finds the helper binaries on this machine.
	Helpers func() *helperbin.Locator
	// LocksDir is the directory of the upload locks (made on demand).
	LocksDir func() (string, error)
}

// Ensure makes <root>/bin/<sha256>/kandev-exec exist, verified and
// speaking this CLI's protocol on the host; uploaded reports whether it
// had to upload. root is the physical workdir root the bootstrap reported
// (physicalRoot), platform the probe's normalised "os/arch". uploading, if
// given, hears how many compressed bytes of how many went out. known,
// when not nil, is what this connection's bootstrap found of a helper
// (Info.Helper): when it found that helper missing or corrupt, that
// stands for the check before the lock (the one under it stays).
//
// The helper comes from the first local source that has one
// (internal/helperbin); one the host finds speaking another protocol (a
// stale cached copy) is passed over for the next source, and when none
// is left the error names them and `helper fetch`.
func (in Installer) Ensure(ctx context.Context, c *ssh.Client, root, platform string, known *HelperState, uploading ...func(sent, total int64)) (Helper, bool, error) {
	refused := map[string]string{} // sha256 -> why the host refused it
	for {
		local, err := in.Helpers().Find(platform, func(h helperbin.Helper) (string, bool) {
			why, ok := refused[h.SHA256]
			return why, ok
		})
		if err != nil {
			return Helper{}, false, err
		}
		h, uploaded, err := in.ensureOne(ctx, c, root, local, known, uploading)
		var pe *protocolError
		if errors.As(err, &pe) {
			refused[local.SHA256] = pe.Error()
			continue
		}
		return h, uploaded, err
	}
}

// ensureOne puts one local helper in place. The fast path is one round
// trip, none when the bootstrap found this helper not in place (known:
// a cached copy is checked again, its handshake with it). Otherwise a
// local lock per host and binary serialises concurrent launches, and the
// check is repeated under it, so a host gets at most one upload from
// this machine.
func (in Installer) ensureOne(ctx context.Context, c *ssh.Client, root string, local helperbin.Helper, known *HelperState, uploading []func(sent, total int64)) (Helper, bool, error) {
	var st HelperState
	if known != nil && !known.cached && known.Helper == (Helper{root: root, sha: local.SHA256}) {
		st = *known
	} else {
		var err error
		if st, err = checkHelper(ctx, c, root, local.SHA256); err != nil {
			return Helper{}, false, err
		}
	}
	if st.cached {
		return st.Helper, false, st.hello
	}
	unlock, err := in.lockHelper(ctx, c.Target.Addr(), local.SHA256)
	if err != nil {
		return Helper{}, false, err
	}
	defer unlock()
	// Another launch may have uploaded it while this one waited.
	if st, err = checkHelper(ctx, c, root, local.SHA256); err != nil || st.cached {
		if err == nil {
			err = st.hello
		}
		return st.Helper, false, err
	}
	gz, err := local.Compressed()
	if err != nil {
		return Helper{}, false, fmt.Errorf("read helper %s: %w", local.Where(), err)
	}
	upload := uploadHelper
	if !st.gzip {
		upload = uploadHelperRaw
	}
	if err := upload(ctx, c, gz, st.Helper, uploading); err != nil {
		var pe *protocolError
		if errors.As(err, &pe) {
			return Helper{}, false, pe
		}
		return Helper{}, false, fmt.Errorf("upload helper %s to %s: %w", local.Where(), c.Target.Label(), err)
	}
	return st.Helper, true, nil
}

// uploadHelper streams gz, the helper gzip-compressed, into h's directory
// (created and checked by checkHelper: only the login user can write
// there) in one round trip: the host decompresses it into a fresh temp
// file (gzip -dc) and installs it (installScript). A host without gzip
// gets it uncompressed over SFTP instead (uploadHelperRaw).
func uploadHelper(ctx context.Context, c *ssh.Client, gz []byte, h Helper, uploading []func(sent, total int64)) error {
	tmp := path.Join(h.dir(), "."+HelperName+".tmp."+rand.Text())
	script := installScript(h, tmp, `command -v gzip >/dev/null 2>&1 || { echo "gzip is not installed on the host (the helper travels compressed)" >&2; exit 127; }
(set -C; : >"$t") || exit 1
gzip -dc >"$t" || exit 1
`)
	var in io.Reader = bytes.NewReader(gz)
	if len(uploading) > 0 {
		in = &progressReader{r: in, total: int64(len(gz)), report: uploading}
	}
	kv, err := runMarkedInput(ctx, c, script, in, helperUploadWait)
	if err != nil {
		return fmt.Errorf("install %s: %w", tmp, err)
	}
	return installed(kv, h, tmp)
}

// installScript receives the helper into the temp file t with receive
// (which creates t, refusing one that exists), makes it 0700 whatever
// the umask, checks the whole path again, verifies the sha256 of what
// arrived, asks it the protocol handshake and only then renames it into
// place atomically. The temp file goes on any failure.
func installScript(h Helper, tmp, receive string) string {
	return sum256 + guardDirScript(h) + `t=` + shquote.Quote(tmp) + ` f=` + shquote.Quote(h.path()) + `
trap 'rm -f "$t"' EXIT
umask 077
` + receive + `chmod 700 "$t" || exit 1
kx_own "$t" -
s=$(sum256 "$t") || exit 1
printf 'sha=%s\n' "${s%% *}"
case $s in ` + h.sha + `*) ;; *) exit 0 ;; esac
` + helloScript(`"$t"`) + `
case $kx_hello in *'"ok":true'*) ;; *) exit 0 ;; esac
if [ -e "$f" ] || [ -L "$f" ]; then kx_own "$f" -; fi
mv -f "$t" "$f" || exit 1
trap - EXIT
echo installed=yes
`
}

// installed reads installScript's marker lines: the sha256 the host
// computed, the handshake's answer, and the rename.
func installed(kv map[string]string, h Helper, tmp string) error {
	if kv["sha"] != h.sha {
		return fmt.Errorf("verify %s: sha256 on the host is %q, want %s", tmp, kv["sha"], h.sha)
	}
	if herr := parseHello(kv["hello"]); herr != nil {
		return herr
	}
	if kv["installed"] != "yes" {
		return fmt.Errorf("install %s: the host did not confirm the rename into %s", tmp, h.path())
	}
	return nil
}

// progressReader reports the bytes read from r as they go: at the start,
// at every twentieth of the total and at least once a second on a slow
// link, and at the end. A read asks for the next bytes once the channel
// took the last ones, so the count is what SSH has accepted.
type progressReader struct {
	r        io.Reader
	sent     int64
	total    int64
	reported int64 // sent at the last report
	last     time.Time
	report   []func(sent, total int64)
	finished bool
}

// progressSteps is how many reports an upload makes, however fast.
const progressSteps = 20

func (p *progressReader) Read(b []byte) (int, error) {
	if p.last.IsZero() {
		p.emit()
	}
	// Reads of at most a step, so that each step is seen.
	if step := int(max(p.total/progressSteps, 1)); len(b) > step {
		b = b[:step]
	}
	n, err := p.r.Read(b)
	p.sent += int64(n)
	switch {
	case p.sent == p.total && !p.finished:
		p.finished = true
		p.emit()
	case p.sent-p.reported >= p.total/progressSteps || time.Since(p.last) >= time.Second:
		p.emit()
	}
	return n, err
}

func (p *progressReader) emit() {
	p.last, p.reported = time.Now(), p.sent
	for _, f := range p.report {
		f(p.sent, p.total)
	}
}

// helperUploadWait bounds the wait for another upload of the same helper
// to the same host, and one upload: longer than any should take over a
// slow link.
const helperUploadWait = 10 * time.Minute

// lockHelper takes <locks>/helper-<addr>-<sha>.lock, the one lock
// of internal/fsx: it dies with its holder, so a crashed launch never
// leaves a host locked; the wait is bounded and cancellable, and names
// who holds it.
func (in Installer) lockHelper(ctx context.Context, addr, sha string) (unlock func(), err error) {
	dir, err := in.LocksDir()
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
