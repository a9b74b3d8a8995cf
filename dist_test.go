package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/sshsig/sshsigtest"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// distVersion is the version TestDist stamps into its release build.
const distVersion = "0.0.0-disttest"

// TestDist builds a release with `make dist` on a clean clone of this
// checkout's HEAD, once, signed with a key of its own, and checks what a
// user of it gets: every CLI carries the four helpers, the linux/arm64 one
// runs (under qemu), this platform's CLI alone, with nothing in its
// directory and an empty cache, launches a task on a real sshd, and it
// refuses to fetch helpers that the project's release key did not sign.
func TestDist(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("TestDist runs the linux CLIs it builds: run it on linux, not %s", runtime.GOOS)
	}
	signer, err := sshsigtest.New(t.TempDir(), "ed25519")
	if err != nil {
		t.Fatal(err)
	}
	dist := makeDist(t, signer.KeyPath)
	helperSums := map[string]string{} // platform -> sha256 of the binary
	t.Run("contents", func(t *testing.T) {
		sums, err := helperbin.ParseSums(readFile(t, filepath.Join(dist, helperbin.ChecksumsFile)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range helperbin.Platforms {
			goos, goarch, _ := strings.Cut(p, "/")
			for _, name := range []string{"kandev-exec-" + goos + "-" + goarch, helperbin.Name(p) + ".gz"} {
				if got := sha256Hex(readFile(t, filepath.Join(dist, name))); sums[name] != got {
					t.Errorf("%s: sha256 %s, checksums.txt says %q", name, got, sums[name])
				}
			}
			helperSums[p] = sha256Hex(gunzip(t, readFile(t, filepath.Join(dist, helperbin.Name(p)+".gz"))))
		}
		if len(sums) != 2*len(helperbin.Platforms) {
			t.Errorf("checksums.txt lists %d files, want the 4 CLIs and the 4 helpers: %v", len(sums), sums)
		}
		sig := readFile(t, filepath.Join(dist, helperbin.SignatureFile))
		if err := sshsigtest.KeygenVerify(signer.PublicKey, helperbin.ReleaseNamespace, readFile(t, filepath.Join(dist, helperbin.ChecksumsFile)), sig); err != nil {
			t.Errorf("checksums.txt.sig: %v", err)
		}
	})

	t.Run("version lists the embedded helpers", func(t *testing.T) {
		var v struct {
			Version  string
			Commit   string
			Protocol int `json:"helper_protocol"`
			Helpers  []helperbin.EmbeddedHelper
		}
		cli := filepath.Join(dist, "kandev-exec-"+runtime.GOOS+"-"+runtime.GOARCH)
		if err := json.Unmarshal(run(t, nil, cli, "version", "--json"), &v); err != nil {
			t.Fatal(err)
		}
		if v.Version != distVersion || len(v.Commit) != 40 || v.Protocol == 0 || len(v.Helpers) != len(helperbin.Platforms) {
			t.Fatalf("version --json = %+v", v)
		}
		for _, h := range v.Helpers {
			if h.SHA256 != helperSums[h.Platform] {
				t.Errorf("embedded %s: sha256 %s, the release's helper is %s", h.Platform, h.SHA256, helperSums[h.Platform])
			}
		}
	})

	// Every CLI embeds the very bytes of the release's linux/arm64 helper,
	// and those bytes decompress to a binary that runs on arm64.
	t.Run("linux/arm64 helper runs under qemu", func(t *testing.T) {
		gz := readFile(t, filepath.Join(dist, helperbin.Name("linux/arm64")+".gz"))
		for _, p := range helperbin.Platforms {
			goos, goarch, _ := strings.Cut(p, "/")
			if !bytes.Contains(readFile(t, filepath.Join(dist, "kandev-exec-"+goos+"-"+goarch)), gz) {
				t.Errorf("the %s CLI does not embed the release's linux/arm64 helper", p)
			}
		}
		bin := filepath.Join(t.TempDir(), "helper")
		if err := os.WriteFile(bin, gunzip(t, gz), 0o700); err != nil {
			t.Fatal(err)
		}
		qemu, err := exec.LookPath("qemu-aarch64-static")
		if err != nil {
			t.Fatalf("qemu-aarch64-static is needed to run the arm64 helper (apt-get install --no-install-recommends qemu-user-static; .ci/run does): %v", err)
		}
		var v struct {
			Protocol int
			Version  string
			Platform string
		}
		if err := json.Unmarshal(run(t, nil, qemu, bin, "version"), &v); err != nil {
			t.Fatal(err)
		}
		if v.Platform != "linux/arm64" || v.Version != distVersion || v.Protocol == 0 {
			t.Fatalf("helper version under qemu = %+v", v)
		}
	})

	t.Run("lone CLI launches on sshd", func(t *testing.T) { loneLaunch(t, dist, helperSums, signer) })
}

// loneLaunch copies this platform's CLI from dist alone into an empty
// directory and, with an empty user cache, launches a task; then asks for
// another platform's helper from dist served as its release, which the
// CLI refuses: signed by another key than the project's, then unsigned.
func loneLaunch(t *testing.T, dist string, helperSums map[string]string, signer *sshsigtest.Signer) {
	work := t.TempDir()
	cli := filepath.Join(work, "bin", "kandev-exec")
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, readFile(t, filepath.Join(dist, "kandev-exec-"+runtime.GOOS+"-"+runtime.GOARCH)), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.NewServer(t)
	cfg := filepath.Join(work, "ssh_config")
	write(t, cfg, fmt.Sprintf("Host target\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
		srv.Port(), srv.User(), srv.UserKeyPath))
	rel := httptest.NewServer(http.StripPrefix("/v"+distVersion, http.FileServer(http.Dir(dist))))
	t.Cleanup(rel.Close)
	env := []string{"HOME=" + filepath.Join(work, "home"), "XDG_CACHE_HOME=" + filepath.Join(work, "cache"),
		"KANDEV_EXEC_STATE_DIR=" + filepath.Join(work, "state"), "KANDEV_EXEC_SSH_CONFIG=" + cfg,
		"KANDEV_EXEC_RELEASE_URL=" + rel.URL, "SSH_AUTH_SOCK=", "NO_COLOR=1"}
	git := func(args ...string) {
		run(t, nil, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	}
	git("init", "-q", "--bare", "-b", "main", filepath.Join(work, "app.git"))
	git("init", "-q", "-b", "main", filepath.Join(work, "seed"))
	git("-C", filepath.Join(work, "seed"), "commit", "-q", "--allow-empty", "-m", "first")
	git("-C", filepath.Join(work, "seed"), "push", "-q", filepath.Join(work, "app.git"), "main")
	root := filepath.Join(work, "remote")
	prof := filepath.Join(work, "p.yaml")
	write(t, prof, fmt.Sprintf("name: p\nhost: prod\nworkdir_root: %s\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n", root, filepath.Join(work, "app.git")))

	run(t, env, cli, "host", "add", "prod", "--alias", "target", "--workdir-root", root)
	run(t, env, cli, "host", "trust", "prod", "--accept-new")
	run(t, env, cli, "profile", "apply", "-f", prof)
	cmd := exec.Command(cli, "task", "launch", "--profile", "p", "--follow", "--", "sh", "-c", "echo launched from dist")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "launched from dist") {
		t.Fatalf("task launch: %v\n%s", err, out)
	}
	// Progress in bytes, from none to all of the compressed helper.
	gzMB := fmt.Sprintf("%.1f", float64(len(readFile(t, filepath.Join(dist, helperbin.Name(runtime.GOOS+"/"+runtime.GOARCH)+".gz"))))/1e6)
	steps := regexp.MustCompile(`• Uploading helper \(([0-9.]+) of ([0-9.]+) MB\)`).FindAllStringSubmatch(string(out), -1)
	if len(steps) < 2 || steps[0][1] != "0.0" || steps[len(steps)-1][1] != gzMB || steps[0][2] != gzMB {
		t.Fatalf("upload progress %v, want 0.0 to %s of %s MB:\n%s", steps, gzMB, gzMB, out)
	}
	local := runtime.GOOS + "/" + runtime.GOARCH
	if got := sha256Hex(readFile(t, filepath.Join(root, "bin", helperSums[local], "kandev-exec"))); got != helperSums[local] {
		t.Fatalf("the host's helper is %s, want the embedded %s", got, helperSums[local])
	}
	var rows []struct {
		Helper      string
		HelperLocal struct{ Source, SHA256 string } `json:"helper_local"`
	}
	if err := json.Unmarshal(run(t, env, cli, "host", "test", "prod", "--json"), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Helper != "cached" || rows[0].HelperLocal.Source != "embedded" || rows[0].HelperLocal.SHA256 != helperSums[local] {
		t.Fatalf("host test = %+v", rows)
	}
	if entries, _ := os.ReadDir(filepath.Dir(cli)); len(entries) != 1 {
		t.Fatalf("the CLI's directory holds more than the CLI: %v", entries)
	}

	// dist/ is laid out as a release, but signed by another key than the
	// project's: helper fetch refuses it, unsigned too, and caches nothing.
	fetch := exec.Command(cli, "helper", "fetch", "--platform", "darwin/arm64")
	fetch.Env = env
	out, err = fetch.CombinedOutput()
	want := "checksums.txt.sig does not prove checksums.txt is a kandev-exec release: signed by key " +
		xssh.FingerprintSHA256(signer.PublicKey) + ", not the trusted " + releaseKeyFingerprint(t)
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), want) {
		t.Fatalf("helper fetch of a dist signed by another key: exit %d, want 1 and %q:\n%s", code, want, out)
	}
	if err := os.Remove(filepath.Join(dist, helperbin.SignatureFile)); err != nil {
		t.Fatal(err)
	}
	fetch = exec.Command(cli, "helper", "fetch", "--platform", "darwin/arm64")
	fetch.Env = env
	out, err = fetch.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "checksums.txt is unsigned (no checksums.txt.sig beside it)") {
		t.Fatalf("helper fetch of an unsigned dist: exit %d, want 1, unsigned:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(work, "cache", "kandev-exec", "helpers", distVersion)); !os.IsNotExist(err) {
		t.Fatalf("the cache was written after a refusal: %v", err)
	}
}

func releaseKeyFingerprint(t *testing.T) string {
	t.Helper()
	k, _, _, _, err := xssh.ParseAuthorizedKey([]byte(helperbin.ReleaseKey))
	if err != nil {
		t.Fatal(err)
	}
	return xssh.FingerprintSHA256(k)
}

// exitCode is a finished command's exit status: 0, or the failure's.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// makeDist runs `make dist` in a fresh clone of HEAD, signing with key,
// and returns its dist/.
func makeDist(t *testing.T, key string) string {
	t.Helper()
	src, head := cloneHead(t)
	run(t, append(os.Environ(), "KANDEV_EXEC_SIGNING_KEY="+key), "make", "-C", src, "dist", "VERSION="+distVersion, "COMMIT="+head)
	return filepath.Join(src, "dist")
}

// cloneHead clones this checkout's HEAD, clean, and returns the clone's
// directory and the commit.
func cloneHead(t *testing.T) (src, head string) {
	t.Helper()
	head = strings.TrimSpace(string(run(t, nil, "git", "rev-parse", "HEAD")))
	src = filepath.Join(t.TempDir(), "src")
	run(t, nil, "git", "clone", "-q", "--no-checkout", ".", src)
	run(t, nil, "git", "-C", src, "checkout", "-q", head)
	if out := run(t, nil, "git", "-C", src, "status", "--porcelain"); len(out) != 0 {
		t.Fatalf("the clone is not clean:\n%s", out)
	}
	return src, head
}

// run runs name with args (env, if given, as its whole environment plus
// PATH) and returns its stdout; a failure ends the test.
func run(t *testing.T, env []string, name string, args ...string) []byte {
	t.Helper()
	return runIn(t, "", env, name, args...)
}

// runIn is run in the directory dir.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func gunzip(t *testing.T, gz []byte) []byte {
	t.Helper()
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

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
