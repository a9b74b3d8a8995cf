//go:build release

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/sshsig"
	"github.com/kdlbs/kandev-exec/internal/sshsig/sshsigtest"
)

// TestRelease runs `goreleaser check` and `goreleaser release --snapshot
// --clean` on a clean clone of HEAD, offline, signed with a key of its
// own, and checks what it publishes: the archives, the .deb and .rpm
// packages, the Homebrew formula, checksums.txt over them and the helpers,
// and its signature. Then it installs this machine's .deb with dpkg and
// uses it (package_test.go). `make release-test` runs it, with goreleaser
// on PATH (scripts/goreleaser.sh builds it when it is missing).
func TestRelease(t *testing.T) {
	gr, err := exec.LookPath("goreleaser")
	if err != nil {
		t.Fatalf("goreleaser is not on PATH: run `make release-test`, which builds it (scripts/goreleaser.sh): %v", err)
	}
	signer, err := sshsigtest.New(t.TempDir(), "ed25519")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := cloneHead(t)
	env := append(os.Environ(), "KANDEV_EXEC_SIGNING_KEY="+signer.KeyPath)
	runIn(t, src, env, gr, "check")
	runIn(t, src, env, gr, "release", "--snapshot", "--clean")
	dist := filepath.Join(src, "dist")

	var meta struct{ Version string }
	if err := json.Unmarshal(readFile(t, filepath.Join(dist, "metadata.json")), &meta); err != nil || meta.Version == "" {
		t.Fatalf("dist/metadata.json: %+v, %v", meta, err)
	}
	v, pkgV := meta.Version, strings.ReplaceAll(meta.Version, "-", "~")
	archives := map[string]string{} // platform -> archive
	for _, p := range helperbin.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		archives[p] = "kandev-exec_" + v + "_" + goos + "_" + goarch + ".tar.gz"
	}
	packages := []string{"kandev-exec_" + pkgV + "_amd64.deb", "kandev-exec_" + pkgV + "_arm64.deb",
		"kandev-exec-" + pkgV + "-1.x86_64.rpm", "kandev-exec-" + pkgV + "-1.aarch64.rpm"}
	published := append(slices.Collect(maps.Values(archives)), packages...)

	t.Run("files", func(t *testing.T) {
		want := append(slices.Clone(published), helperbin.ChecksumsFile, helperbin.SignatureFile,
			"artifacts.json", "config.yaml", "metadata.json")
		var got []string
		entries, err := os.ReadDir(dist)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				got = append(got, e.Name())
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("dist/ holds %q,\nwant %q", got, want)
		}
	})

	t.Run("checksums and signature", func(t *testing.T) {
		sums := readFile(t, filepath.Join(dist, helperbin.ChecksumsFile))
		sig := readFile(t, filepath.Join(dist, helperbin.SignatureFile))
		if err := sshsigtest.KeygenVerify(signer.PublicKey, helperbin.ReleaseNamespace, sums, sig); err != nil {
			t.Errorf("ssh-keygen -Y verify: %v", err)
		}
		if err := sshsig.Verify(signer.PublicKey, helperbin.ReleaseNamespace, sums, sig); err != nil {
			t.Errorf("sshsig.Verify: %v", err)
		}
		listed, err := helperbin.ParseSums(sums)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, name := range published {
			want[name] = sha256Hex(readFile(t, filepath.Join(dist, name)))
		}
		for _, p := range helperbin.Platforms {
			name := helperbin.Name(p) + ".gz"
			want[name] = sha256Hex(readFile(t, filepath.Join(src, "internal", "helperbin", "embedded", name)))
		}
		if len(listed) != len(want) {
			t.Errorf("checksums.txt lists %d files, want %d: %v", len(listed), len(want), listed)
		}
		for name, sum := range want {
			if listed[name] != sum {
				t.Errorf("checksums.txt: %s is %q, the file's sha256 is %s", name, listed[name], sum)
			}
		}
	})

	t.Run("archive", func(t *testing.T) {
		files := tarFiles(t, filepath.Join(dist, archives["linux/"+runtime.GOARCH]))
		want := []string{"kandev-exec", "LICENSE", "README.md",
			"packaging/kandev-exec-sweep.service", "packaging/kandev-exec-sweep.timer", "packaging/kandev-exec-sweep.cron"}
		for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
			want = append(want, "completions/kandev-exec."+sh)
		}
		for _, page := range manPages(t, src) {
			want = append(want, "man/"+page)
		}
		for _, name := range want {
			b, ok := files[name]
			if !ok {
				t.Errorf("the archive lacks %s", name)
			} else if name != "kandev-exec" && !bytes.Equal(b, readFile(t, filepath.Join(src, name))) {
				t.Errorf("the archive's %s differs from the repository's", name)
			}
		}
		if len(files) != len(want) {
			t.Errorf("the archive holds %d files, want %d", len(files), len(want))
		}
	})

	t.Run("homebrew formula", func(t *testing.T) {
		formula := string(readFile(t, filepath.Join(dist, "homebrew", "Formula", "kandev-exec.rb")))
		sums, _ := helperbin.ParseSums(readFile(t, filepath.Join(dist, helperbin.ChecksumsFile)))
		for _, name := range archives {
			if !strings.Contains(formula, "/"+name+"\"") || !strings.Contains(formula, `sha256 "`+sums[name]+`"`) {
				t.Errorf("the formula lacks %s with its sha256", name)
			}
		}
		for _, s := range []string{`license "Apache-2.0"`, `bin.install "kandev-exec"`, `man1.install Dir["man/*.1"]`,
			`bash_completion.install "completions/kandev-exec.bash" => "kandev-exec"`,
			`run [opt_bin/"kandev-exec", "sweep"]`, `interval 900`} {
			if !strings.Contains(formula, s) {
				t.Errorf("the formula lacks %s:\n%s", s, formula)
			}
		}
	})

	t.Run("deb installs and works", func(t *testing.T) {
		installDeb(t, src, filepath.Join(dist, "kandev-exec_"+pkgV+"_"+runtime.GOARCH+".deb"), v)
	})
}

// manPages is every page in the repository's man/.
func manPages(t *testing.T, src string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(src, "man", "*.1"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no man pages in %s/man: %v", src, err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

// tarFiles reads a .tar.gz: each regular file's contents by path.
func tarFiles(t *testing.T, archive string) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(readFile(t, archive)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}
