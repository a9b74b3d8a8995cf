package helperbin

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// DefaultReleaseURL is where releases are published, one directory per
// tag: <url>/v<version>/<file>.
const DefaultReleaseURL = "https://github.com/kdlbs/kandev-exec/releases/download"

// ChecksumsFile is the release's sha256 list, covering the helpers' gzip
// copies.
const ChecksumsFile = "checksums.txt"

// maxDownload bounds any one file fetched: a helper is a few MB.
const maxDownload = 64 << 20

// Fetcher puts release helpers into a version's cache directory, each
// verified first against the release's published checksums, which must
// carry the release key's signature (releasekey.go).
type Fetcher struct {
	ReleaseURL string // "" means DefaultReleaseURL
	Version    string
	CacheDir   string
	Client     *http.Client // nil means http.DefaultClient
}

// Fetched is one helper placed in the cache.
type Fetched struct {
	Platform string `json:"platform"`
	Path     string `json:"path"`
	SHA256   string `json:"sha256"` // of the binary
	From     string `json:"from"`   // the URL or file it came from
}

// ChecksumError is a file whose sha256 is not the one the release
// published for it: it is refused, nothing is written.
type ChecksumError struct{ File, Got, Want string }

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: sha256 is %s, the release's %s says %s; refusing it", e.File, e.Got, ChecksumsFile, e.Want)
}

// DevBuildError is a download asked of a build with no release.
type DevBuildError struct{ Version string }

func (e *DevBuildError) Error() string {
	return fmt.Sprintf("this kandev-exec is a development build (version %q): there is no release to download its helpers from; "+
		"pass --from FILE|DIR with a release's helper, %s and %s, or run `make helpers` in the source checkout", e.Version, ChecksumsFile, SignatureFile)
}

// Download fetches the helpers for platforms from this version's release.
func (f *Fetcher) Download(ctx context.Context, platforms []string) ([]Fetched, error) {
	if f.Version == "" || f.Version == "dev" {
		return nil, &DevBuildError{Version: f.Version}
	}
	base := f.ReleaseURL
	if base == "" {
		base = DefaultReleaseURL
	}
	base = strings.TrimSuffix(base, "/") + "/v" + strings.TrimPrefix(f.Version, "v") + "/"
	return f.fetch(platforms, func(name string) ([]byte, string, error) {
		b, err := f.get(ctx, base+name)
		return b, base + name, err
	})
}

// FromPath takes the helpers from a release's files on disk: a
// directory holding them, checksums.txt and its signature, or one
// helper's .gz with those two beside it. With no platforms, a directory gives every
// helper it holds.
func (f *Fetcher) FromPath(p string, platforms []string) ([]Fetched, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	dir := p
	if !fi.IsDir() {
		dir = filepath.Dir(p)
		plat, ok := platformOf(filepath.Base(p))
		if !ok {
			return nil, fmt.Errorf("%s is not a release helper: want a file named %s.gz for one of %s", p, Name("OS/ARCH"), strings.Join(Platforms, ", "))
		}
		if len(platforms) > 0 && (len(platforms) != 1 || platforms[0] != plat) {
			return nil, fmt.Errorf("%s is the helper for %s, not %s", p, plat, strings.Join(platforms, ", "))
		}
		platforms = []string{plat}
	} else if len(platforms) == 0 {
		for _, plat := range Platforms {
			if _, err := os.Stat(filepath.Join(dir, Name(plat)+".gz")); err == nil {
				platforms = append(platforms, plat)
			}
		}
		if len(platforms) == 0 {
			return nil, fmt.Errorf("%s holds no release helper (%s.gz)", dir, Name("OS/ARCH"))
		}
	}
	return f.fetch(platforms, func(name string) ([]byte, string, error) {
		src := filepath.Join(dir, name)
		b, err := fsx.ReadNamedFileMax(src, maxDownload)
		return b, src, err
	})
}

// platformOf reads the platform out of a helper's .gz file name.
func platformOf(name string) (string, bool) {
	for _, p := range Platforms {
		if name == Name(p)+".gz" {
			return p, true
		}
	}
	return "", false
}

// fetch reads the checksums and verifies their signature, then reads
// each helper, verifies and caches it; nothing is cached unless the
// signature and every helper verify.
func (f *Fetcher) fetch(platforms []string, get func(name string) ([]byte, string, error)) ([]Fetched, error) {
	for _, p := range platforms {
		if !Supported(p) {
			return nil, &UnsupportedPlatformError{Platform: p}
		}
	}
	raw, from, err := get(ChecksumsFile)
	if err != nil {
		return nil, fmt.Errorf("read the release's %s: %w", ChecksumsFile, err)
	}
	if err := verifySignature(raw, from, get); err != nil {
		return nil, err
	}
	published, err := ParseSums(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	type verified struct {
		Fetched
		gz []byte
	}
	var all []verified
	for _, p := range platforms {
		name := Name(p) + ".gz"
		want, ok := published[name]
		if !ok {
			return nil, fmt.Errorf("%s lists no %s", from, name)
		}
		gz, src, err := get(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if got := sha256Hex(gz); got != want {
			return nil, &ChecksumError{File: src, Got: got, Want: want}
		}
		sum, err := gunzipSHA256(gz)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		all = append(all, verified{Fetched{Platform: p, Path: filepath.Join(f.CacheDir, name), SHA256: sum, From: src}, gz})
	}
	if err := os.MkdirAll(f.CacheDir, 0o700); err != nil {
		return nil, err
	}
	out := []Fetched{}
	for _, v := range all {
		// Drop a raw copy of another build, which would shadow nothing
		// (the .gz is looked for first) but confuse whoever reads the dir.
		if err := os.Remove(strings.TrimSuffix(v.Path, ".gz")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err := fsx.WriteFile(v.Path, v.gz, true); err != nil {
			return nil, fmt.Errorf("cache %s: %w", v.Path, err)
		}
		out = append(out, v.Fetched)
	}
	return out, nil
}

func (f *Fetcher) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &httpStatusError{URL: url, Status: resp.Status, Code: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDownload+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > maxDownload {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", url, maxDownload)
	}
	return b, nil
}

// httpStatusError is a download the server did not answer with the file;
// a 404 is fs.ErrNotExist, as a missing file on disk is.
type httpStatusError struct {
	URL, Status string
	Code        int
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("GET %s: %s", e.URL, e.Status) }

func (e *httpStatusError) Is(target error) bool {
	return target == fs.ErrNotExist && e.Code == http.StatusNotFound
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// gunzipSHA256 checks that gz decompresses whole and returns the sha256
// of what it holds.
func gunzipSHA256(gz []byte) (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, zr); err != nil {
		return "", err
	}
	if err := zr.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
