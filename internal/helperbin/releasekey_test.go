package helperbin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshsig"
	"github.com/kdlbs/kandev-exec/internal/sshsig/sshsigtest"
)

// testRelease is the tests' release key, trusted in place of the
// project's; otherKey signs what must be refused.
var testRelease, otherKey *sshsigtest.Signer

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "helperbin-test")
	if err == nil {
		testRelease, err = sshsigtest.New(dir, "ed25519")
	}
	if err == nil {
		otherKey, err = sshsigtest.New(dir, "ed25519")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	TrustForTesting(testRelease.AuthorizedKey)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func signWith(t *testing.T, s *sshsigtest.Signer, namespace string, b []byte) []byte {
	t.Helper()
	sig, err := s.Sign(namespace, b)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// The project's key is an ed25519 key whose private half signed
// testdata/release-key-proof.txt (the maintainers did, with the key they
// sign releases with), and the one a real CLI trusts.
func TestReleaseKeyIsTheProjects(t *testing.T) {
	k := mustParseKey(ReleaseKey)
	if k.Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("release key type %s, want ed25519", k.Type())
	}
	proof, err := os.ReadFile(filepath.Join("testdata", "release-key-proof.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(filepath.Join("testdata", "release-key-proof.txt.sig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sshsig.Verify(k, ReleaseNamespace, proof, sig); err != nil {
		t.Fatalf("the release key did not sign testdata/release-key-proof.txt: %v", err)
	}
	if trustedKey.Type() != ssh.KeyAlgoED25519 || string(trustedKey.Marshal()) == string(k.Marshal()) {
		t.Fatal("the tests must trust their own key, not the project's")
	}
}

// A checksums file that is unsigned, signed by another key, signed for
// something else, or changed since it was signed is refused, from a
// directory and from a download alike, naming what failed; nothing is
// cached.
func TestFetchRefusesWhatTheReleaseKeyDidNotSign(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, r *release)
		want string
	}{
		{"unsigned", func(t *testing.T, r *release) { r.sig = nil },
			"is unsigned (no checksums.txt.sig beside it): refusing its helpers"},
		{"another key", func(t *testing.T, r *release) { r.sig = signWith(t, otherKey, ReleaseNamespace, []byte(r.sums)) },
			"checksums.txt.sig does not prove checksums.txt is a kandev-exec release: signed by key " +
				ssh.FingerprintSHA256(otherKey.PublicKey) + ", not the trusted " + ssh.FingerprintSHA256(testRelease.PublicKey)},
		{"another namespace", func(t *testing.T, r *release) { r.sig = signWith(t, testRelease, "file", []byte(r.sums)) },
			`signed for namespace "file", want "kandev-exec-release"`},
		{"altered checksums", func(t *testing.T, r *release) { r.sums += strings.Repeat("0", 64) + "  extra\n" },
			"the signature does not match the file"},
		{"not a signature", func(t *testing.T, r *release) { r.sig = []byte("signed, honest\n") },
			"not an SSH signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := newRelease(t, "v1")
			tc.edit(t, rel)
			dir := t.TempDir()
			rel.writeDir(t, dir)
			cache := filepath.Join(t.TempDir(), "1.2.3")
			f := &Fetcher{ReleaseURL: server(t, rel).URL, Version: "1.2.3", CacheDir: cache}
			_, dirErr := f.FromPath(filepath.Join(dir, Name("linux/arm64")+".gz"), nil)
			_, dlErr := f.Download(context.Background(), Platforms)
			for _, err := range []error{dirErr, dlErr} {
				var ue *UnsignedError
				var se *SignatureError
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) && !errors.As(err, &se) {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
			}
			if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("cache written after a refusal: %v", err)
			}
		})
	}
}

// A real binary cannot trust another key: TrustForTesting panics there.
// The probe is a program added to the module for one build (go build
// -overlay), so it links helperbin as the CLI does.
func TestTrustForTestingPanicsOutsideTests(t *testing.T) {
	dir := t.TempDir()
	pkgDir, err := filepath.Abs(filepath.Join("internal", "trustprobe"))
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "main.go")
	src := "package main\n\nimport \"github.com/kdlbs/kandev-exec/internal/helperbin\"\n\n" +
		"func main() { helperbin.TrustForTesting(" + fmt.Sprintf("%q", otherKey.AuthorizedKey) + ") }\n"
	if err := os.WriteFile(probe, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkgDir, "main.go"): probe}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-overlay", overlayFile, "-o", bin, "./internal/trustprobe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build the probe: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "panic: helperbin.TrustForTesting called outside a test binary") {
		t.Fatalf("the probe: %v\n%s", err, out)
	}
}
