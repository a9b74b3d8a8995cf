package helperbin

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// release is a fake release of every platform: each helper's bytes, its
// gzip copy, and checksums.txt over the copies, signed by the tests'
// release key.
type release struct {
	bin  map[string][]byte // platform -> binary
	gz   map[string][]byte // platform -> gzip copy
	sums string            // checksums.txt
	sig  []byte            // checksums.txt.sig; nil: unsigned
}

func newRelease(t *testing.T, tag string) *release {
	t.Helper()
	r := &release{bin: map[string][]byte{}, gz: map[string][]byte{}}
	var sums strings.Builder
	for _, p := range Platforms {
		r.bin[p] = []byte(strings.Repeat("helper "+p+" "+tag+"\n", 1000))
		r.gz[p] = gzipBytes(t, r.bin[p])
		fmt.Fprintf(&sums, "%s  %s.gz\n", sha256Hex(r.gz[p]), Name(p))
	}
	fmt.Fprintf(&sums, "%s  kandev-exec_1.2.3_linux_amd64.tar.gz\n", sha256Hex([]byte("an archive")))
	r.sums = sums.String()
	r.sig = signWith(t, testRelease, ReleaseNamespace, []byte(r.sums))
	return r
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// writeDir lays the release out as files in dir.
func (r *release) writeDir(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, ChecksumsFile), []byte(r.sums))
	if r.sig != nil {
		write(t, filepath.Join(dir, SignatureFile), r.sig)
	}
	for p, gz := range r.gz {
		write(t, filepath.Join(dir, Name(p)+".gz"), gz)
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// decompressed is what h sends to a host, decompressed.
func decompressed(t *testing.T, h Helper) []byte {
	t.Helper()
	gz, err := h.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each source, for each platform: the helper found, its sha256 (of the
// binary, whatever the copy), and the bytes a host would receive.
func TestFindEachSourceEachPlatform(t *testing.T) {
	rel := newRelease(t, "v1")
	local := runtime.GOOS + "/" + runtime.GOARCH
	for _, p := range Platforms {
		for _, src := range []string{"embedded", "beside", "beside-raw", "cache", "fetched", "self"} {
			t.Run(p+"/"+src, func(t *testing.T) {
				exeDir := t.TempDir()
				l := &Locator{Executable: filepath.Join(exeDir, "kandev-exec"), CacheDir: filepath.Join(t.TempDir(), "v1"), Version: "1.2.3"}
				self := []byte("the CLI itself, built for " + local)
				write(t, l.Executable, self)
				want, wantSrc := rel.bin[p], Source(src)
				switch src {
				case "embedded":
					l.Embedded = fstest.MapFS{
						Name(p) + ".gz": {Data: rel.gz[p]},
						SumsFile:        {Data: []byte(sha256Hex(rel.bin[p]) + "  " + Name(p) + "\n")},
					}
				case "beside":
					write(t, filepath.Join(exeDir, Name(p)+".gz"), rel.gz[p])
				case "beside-raw":
					write(t, filepath.Join(exeDir, Name(p)), rel.bin[p])
					wantSrc = SourceBeside
				case "cache":
					write(t, filepath.Join(l.CacheDir, Name(p)+".gz"), rel.gz[p])
				case "fetched":
					relDir := t.TempDir()
					rel.writeDir(t, relDir)
					if _, err := (&Fetcher{Version: "1.2.3", CacheDir: l.CacheDir}).FromPath(relDir, []string{p}); err != nil {
						t.Fatal(err)
					}
					wantSrc = SourceCache
				case "self":
					want, wantSrc = self, SourceSelf
				}
				h, err := l.Find(p, nil)
				if src == "self" && p != local {
					var me *MissingError
					if !errors.As(err, &me) || !strings.Contains(err.Error(), "kandev-exec helper fetch --platform "+p) {
						t.Fatalf("only the CLI, for another platform: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Source != wantSrc || h.Platform != p || h.SHA256 != sha256Hex(want) {
					t.Fatalf("Find = %+v, want source %s, sha %s", h, wantSrc, sha256Hex(want))
				}
				if got := decompressed(t, h); !bytes.Equal(got, want) {
					t.Fatalf("sent %d bytes, want the %d of the helper", len(got), len(want))
				}
			})
		}
	}
}

// The order: embedded, beside, cache, self; a helper a host refused is
// skipped for the next one, and named when none is left.
func TestFindOrderAndRefusal(t *testing.T) {
	rel := newRelease(t, "new")
	old := newRelease(t, "old")
	local := runtime.GOOS + "/" + runtime.GOARCH
	exeDir := t.TempDir()
	l := &Locator{Executable: filepath.Join(exeDir, "kandev-exec"), CacheDir: t.TempDir(), Version: "dev",
		Embedded: fstest.MapFS{Name(local) + ".gz": {Data: rel.gz[local]},
			SumsFile: {Data: []byte(sha256Hex(rel.bin[local]) + "  " + Name(local) + "\n")}}}
	write(t, l.Executable, []byte("cli"))
	write(t, filepath.Join(exeDir, Name(local)+".gz"), old.gz[local])
	write(t, filepath.Join(l.CacheDir, Name(local)+".gz"), old.gz[local])

	var seen []Source
	refuseAll := func(h Helper) (string, bool) { seen = append(seen, h.Source); return "protocol 1, want 2", true }
	_, err := l.Find(local, refuseAll)
	if want := []Source{SourceEmbedded, SourceBeside, SourceCache, SourceSelf}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("tried %v, want %v", seen, want)
	}
	var me *MissingError
	if !errors.As(err, &me) || len(me.Refused) != 4 || !strings.Contains(err.Error(), "(protocol 1, want 2)") ||
		!strings.Contains(err.Error(), "helper fetch --platform "+local) || !strings.Contains(err.Error(), "make helpers") {
		t.Fatalf("all refused: %v", err)
	}

	// A stale beside copy refused: the cache's copy is next.
	stale := sha256Hex(old.bin[local])
	h, err := l.Find(local, func(h Helper) (string, bool) {
		return "stale", h.Source == SourceEmbedded || h.SHA256 == stale && h.Source == SourceBeside
	})
	if err != nil || h.Source != SourceCache {
		t.Fatalf("after refusing embedded and beside: %+v, %v", h, err)
	}
}

func TestFindUnsupportedPlatform(t *testing.T) {
	_, err := (&Locator{}).Find("freebsd/amd64", nil)
	var ue *UnsupportedPlatformError
	want := `unsupported remote platform "freebsd/amd64" — kandev-exec supports linux/{amd64,arm64} and darwin/{amd64,arm64}`
	if !errors.As(err, &ue) || err.Error() != want {
		t.Fatalf("err = %v", err)
	}
}

// A corrupt cached copy is named, with the way to replace it.
func TestFindCorruptCache(t *testing.T) {
	l := &Locator{CacheDir: t.TempDir(), Version: "1.2.3"}
	bad := filepath.Join(l.CacheDir, Name("linux/arm64")+".gz")
	write(t, bad, []byte("not gzip"))
	_, err := l.Find("linux/arm64", nil)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "helper fetch --platform linux/arm64") {
		t.Fatalf("err = %v", err)
	}
}

// server serves rel as release v1.2.3 and counts the requests.
func server(t *testing.T, rel *release) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/v1.2.3/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		if name == ChecksumsFile {
			io.WriteString(w, rel.sums)
			return
		}
		if name == SignatureFile && rel.sig != nil {
			w.Write(rel.sig)
			return
		}
		for p, gz := range rel.gz {
			if name == Name(p)+".gz" {
				w.Write(gz)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDownloadVerifiesAndCaches(t *testing.T) {
	rel := newRelease(t, "v1")
	srv := server(t, rel)
	cache := filepath.Join(t.TempDir(), "1.2.3")
	f := &Fetcher{ReleaseURL: srv.URL, Version: "v1.2.3", CacheDir: cache}
	got, err := f.Download(context.Background(), Platforms)
	if err != nil || len(got) != len(Platforms) {
		t.Fatalf("Download = %+v, %v", got, err)
	}
	l := &Locator{CacheDir: cache}
	for _, g := range got {
		h, err := l.Find(g.Platform, nil)
		if err != nil || h.Source != SourceCache || h.SHA256 != sha256Hex(rel.bin[g.Platform]) || g.SHA256 != h.SHA256 {
			t.Fatalf("%s: %+v, %v (fetched %+v)", g.Platform, h, err, g)
		}
		if g.From != srv.URL+"/v1.2.3/"+Name(g.Platform)+".gz" {
			t.Fatalf("from %s", g.From)
		}
	}
}

// A helper whose sha256 is not the published one is refused, and nothing
// is cached, not even the platforms that did verify.
func TestDownloadChecksumMismatchRefused(t *testing.T) {
	rel := newRelease(t, "v1")
	rel.gz["linux/arm64"] = gzipBytes(t, []byte("tampered"))
	srv := server(t, rel)
	cache := filepath.Join(t.TempDir(), "1.2.3")
	_, err := (&Fetcher{ReleaseURL: srv.URL, Version: "1.2.3", CacheDir: cache}).Download(context.Background(), Platforms)
	var ce *ChecksumError
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, Name("linux/arm64")+".gz") || !strings.Contains(err.Error(), "refusing it") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cache written after a refusal: %v", err)
	}
}

func TestDownloadErrors(t *testing.T) {
	rel := newRelease(t, "v1")
	srv := server(t, rel)
	cache := t.TempDir()
	for name, tc := range map[string]struct {
		f    Fetcher
		plat []string
		want string
	}{
		"dev build":       {Fetcher{ReleaseURL: srv.URL, Version: "dev", CacheDir: cache}, Platforms, "development build"},
		"no such release": {Fetcher{ReleaseURL: srv.URL, Version: "9.9.9", CacheDir: cache}, Platforms, "/v9.9.9/checksums.txt: 404 Not Found"},
		"unsupported":     {Fetcher{ReleaseURL: srv.URL, Version: "1.2.3", CacheDir: cache}, []string{"plan9/386"}, `unsupported remote platform "plan9/386"`},
	} {
		_, err := tc.f.Download(context.Background(), tc.plat)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Fatalf("cache written: %v", entries)
	}
}

// Air-gapped: one helper file with the release's checksums.txt beside
// it, or a directory of them; a mismatch is refused there too.
func TestFromPath(t *testing.T) {
	rel := newRelease(t, "v1")
	dir := t.TempDir()
	rel.writeDir(t, dir)
	cache := t.TempDir()
	f := &Fetcher{Version: "dev", CacheDir: cache}

	got, err := f.FromPath(filepath.Join(dir, Name("darwin/arm64")+".gz"), nil)
	if err != nil || len(got) != 1 || got[0].Platform != "darwin/arm64" || got[0].SHA256 != sha256Hex(rel.bin["darwin/arm64"]) {
		t.Fatalf("one file: %+v, %v", got, err)
	}
	if _, err := f.FromPath(filepath.Join(dir, Name("darwin/arm64")+".gz"), []string{"linux/amd64"}); err == nil ||
		!strings.Contains(err.Error(), "is the helper for darwin/arm64, not linux/amd64") {
		t.Fatalf("file for another platform: %v", err)
	}
	os.Remove(filepath.Join(dir, Name("darwin/amd64")+".gz"))
	got, err = f.FromPath(dir, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("directory: %+v, %v", got, err)
	}

	write(t, filepath.Join(dir, Name("linux/amd64")+".gz"), gzipBytes(t, []byte("swapped")))
	fresh := &Fetcher{Version: "dev", CacheDir: filepath.Join(t.TempDir(), "c")}
	var ce *ChecksumError
	if _, err := fresh.FromPath(dir, nil); !errors.As(err, &ce) {
		t.Fatalf("swapped file: %v", err)
	}
	if _, err := os.Stat(fresh.CacheDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cache written after a refusal: %v", err)
	}

	lone := filepath.Join(t.TempDir(), Name("linux/arm64")+".gz")
	write(t, lone, rel.gz["linux/arm64"])
	if _, err := f.FromPath(lone, nil); err == nil || !strings.Contains(err.Error(), ChecksumsFile) {
		t.Fatalf("no checksums beside the file: %v", err)
	}
	if _, err := f.FromPath(filepath.Join(dir, ChecksumsFile), nil); err == nil || !strings.Contains(err.Error(), "is not a release helper") {
		t.Fatalf("not a helper: %v", err)
	}
}

func TestParseSums(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("B", 64)
	got, err := ParseSums([]byte(a + "  dist/x.gz\n" + b + " *y\n\n"))
	if err != nil || got["x.gz"] != a || got["y"] != strings.ToLower(b) {
		t.Fatalf("%v, %v", got, err)
	}
	if _, err := ParseSums([]byte("abc  x\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("short sum: %v", err)
	}
}
