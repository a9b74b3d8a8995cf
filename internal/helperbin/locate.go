package helperbin

import (
	"bytes"
	"compress/gzip"
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

	"github.com/kdlbs/kandev-exec/internal/buildinfo"
)

// Helper is one helper binary found on this machine.
type Helper struct {
	Platform string
	Source   Source
	Path     string // the file it comes from; "" when embedded
	SHA256   string // of the binary itself, not of a compressed copy

	gz     []byte // embedded: the compressed bytes
	zipped bool   // Path holds a gzip copy
}

// Where names the helper for people: its file, or "embedded".
func (h Helper) Where() string {
	if h.Source == SourceEmbedded {
		return "embedded " + Name(h.Platform)
	}
	return h.Path
}

// Compressed returns the helper gzip-compressed, as it travels to a host.
func (h Helper) Compressed() ([]byte, error) {
	switch {
	case h.Source == SourceEmbedded:
		return h.gz, nil
	case h.zipped:
		return os.ReadFile(h.Path)
	}
	f, err := os.Open(h.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b) // the default level: a release ships its copies at -9 already
	if _, err := io.Copy(zw, f); err != nil {
		return nil, fmt.Errorf("compress %s: %w", h.Path, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Locator searches the sources in order: embedded, beside the CLI, the
// cache, the CLI itself.
type Locator struct {
	Embedded   fs.FS  // gzip copies and SHA256SUMS (embed.go); nil: none
	Executable string // the CLI binary, symlinks resolved; "": no beside, no self
	CacheDir   string // this version's cache directory; "": none
	Version    string // the CLI's version, "dev" for a development build
}

// Default is the locator of this process.
func Default() *Locator {
	l := &Locator{Embedded: embedded, Version: buildinfo.Version}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		l.Executable = exe
	}
	if dir, err := CacheDir(buildinfo.Version); err == nil {
		l.CacheDir = dir
	}
	return l
}

// CacheDir is where helper fetch keeps the helpers of a CLI version.
func CacheDir(version string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "kandev-exec", "helpers", safeVersion(version)), nil
}

// safeVersion keeps a version usable as one path element.
func safeVersion(v string) string {
	v = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' {
			return r
		}
		return '_'
	}, v)
	if v == "" || v == "." || v == ".." {
		return "_" + v
	}
	return v
}

// Find returns the first helper for platform, in source order, whose
// sha256 refused does not reject: a host said that one speaks another
// protocol (refused may be nil). No helper left is a *MissingError.
func (l *Locator) Find(platform string, refused func(Helper) (reason string, skip bool)) (Helper, error) {
	if !Supported(platform) {
		return Helper{}, &UnsupportedPlatformError{Platform: platform}
	}
	miss := &MissingError{Platform: platform, Dev: l.Version == "dev" || l.Version == ""}
	for _, find := range []func(string, *MissingError) (Helper, bool, error){l.embedded, l.beside, l.cached, l.self} {
		h, ok, err := find(platform, miss)
		if err != nil {
			return Helper{}, err
		}
		if !ok {
			continue
		}
		if refused != nil {
			if reason, skip := refused(h); skip {
				miss.Refused = append(miss.Refused, h.Where()+" ("+reason+")")
				continue
			}
		}
		return h, nil
	}
	return Helper{}, miss
}

func (l *Locator) embedded(platform string, miss *MissingError) (Helper, bool, error) {
	if l.Embedded == nil {
		return Helper{}, false, nil
	}
	miss.Looked = append(miss.Looked, "this binary")
	sums, err := embeddedSums(l.Embedded)
	if err != nil {
		return Helper{}, false, err
	}
	sum, ok := sums[Name(platform)]
	if !ok {
		return Helper{}, false, nil
	}
	gz, err := fs.ReadFile(l.Embedded, Name(platform)+".gz")
	if err != nil {
		return Helper{}, false, fmt.Errorf("embedded helper for %s: %w", platform, err)
	}
	return Helper{Platform: platform, Source: SourceEmbedded, SHA256: sum, gz: gz, zipped: true}, true, nil
}

func (l *Locator) beside(platform string, miss *MissingError) (Helper, bool, error) {
	if l.Executable == "" {
		return Helper{}, false, nil
	}
	return inDir(filepath.Dir(l.Executable), platform, SourceBeside, miss)
}

func (l *Locator) cached(platform string, miss *MissingError) (Helper, bool, error) {
	if l.CacheDir == "" {
		return Helper{}, false, nil
	}
	return inDir(l.CacheDir, platform, SourceCache, miss)
}

// self is the CLI binary for a host of its own platform.
func (l *Locator) self(platform string, _ *MissingError) (Helper, bool, error) {
	if l.Executable == "" || platform != runtime.GOOS+"/"+runtime.GOARCH {
		return Helper{}, false, nil
	}
	sum, err := FileSHA256(l.Executable, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Helper{}, false, nil // replaced or removed since it started
	}
	if err != nil {
		return Helper{}, false, fmt.Errorf("hash %s: %w", l.Executable, err)
	}
	return Helper{Platform: platform, Source: SourceSelf, Path: l.Executable, SHA256: sum}, true, nil
}

// inDir finds NAME.gz, else NAME, in dir.
func inDir(dir, platform string, src Source, miss *MissingError) (Helper, bool, error) {
	name := filepath.Join(dir, Name(platform))
	miss.Looked = append(miss.Looked, name+"[.gz]")
	for _, zipped := range []bool{true, false} {
		p := name
		if zipped {
			p += ".gz"
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Helper{}, false, err
		}
		if !fi.Mode().IsRegular() {
			return Helper{}, false, fmt.Errorf("helper %s is not a regular file", p)
		}
		sum, err := FileSHA256(p, zipped)
		if err != nil {
			return Helper{}, false, fmt.Errorf("read helper %s: %w; remove it, or run `kandev-exec helper fetch --platform %s` to replace it", p, err, platform)
		}
		return Helper{Platform: platform, Source: src, Path: p, SHA256: sum, zipped: zipped}, true, nil
	}
	return Helper{}, false, nil
}

// Embedded lists the helpers compiled into this binary, by platform.
func Embedded() ([]EmbeddedHelper, error) {
	if embedded == nil {
		return []EmbeddedHelper{}, nil
	}
	sums, err := embeddedSums(embedded)
	if err != nil {
		return nil, err
	}
	out := []EmbeddedHelper{}
	for _, p := range Platforms {
		if s, ok := sums[Name(p)]; ok {
			out = append(out, EmbeddedHelper{Platform: p, SHA256: s})
		}
	}
	return out, nil
}

// EmbeddedHelper is one entry of `version --json`'s helpers.
type EmbeddedHelper struct {
	Platform string `json:"platform"`
	SHA256   string `json:"sha256"`
}

// embeddedSums reads the SHA256SUMS recorded beside the embedded copies
// when they were compressed: the sums of the binaries themselves.
func embeddedSums(fsys fs.FS) (map[string]string, error) {
	b, err := fs.ReadFile(fsys, SumsFile)
	if err != nil {
		return nil, fmt.Errorf("embedded helpers: %w", err)
	}
	sums, err := ParseSums(b)
	if err != nil {
		return nil, fmt.Errorf("embedded helpers: %s: %w", SumsFile, err)
	}
	return sums, nil
}

// SumsFile lists the sha256 of each embedded helper binary.
const SumsFile = "SHA256SUMS"

// ParseSums reads sha256sum output ("<hex>  <name>", or "<hex> *<name>"),
// keyed by base name.
func ParseSums(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimLeft(name, " "), "*")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 2*sha256.Size || name == "" {
			return nil, fmt.Errorf("line %d: want \"<sha256>  <file>\", got %.80q", i+1, line)
		}
		out[path.Base(name)] = strings.ToLower(sum)
	}
	return out, nil
}
