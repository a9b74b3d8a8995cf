//go:build release

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
)

// installDeb installs deb with dpkg into a root of its own (as root;
// otherwise it unpacks it with dpkg-deb) and uses it as an operator
// would: the CLI on PATH, bash completion loaded by bash-completion from
// the system directory, the man pages, the license, and the sweep that
// the systemd user units and the cron line run.
func installDeb(t *testing.T, src, deb, version string) {
	root := t.TempDir()
	if os.Geteuid() == 0 {
		admin := filepath.Join(root, "var", "lib", "dpkg")
		for _, d := range []string{"updates", "info"} {
			if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(admin, "status"), "")
		run(t, nil, "dpkg", "--root="+root, "-i", deb)
		if st := run(t, nil, "dpkg", "--root="+root, "-s", "kandev-exec"); !bytes.Contains(st, []byte("Status: install ok installed")) {
			t.Fatalf("dpkg -s kandev-exec:\n%s", st)
		}
	} else {
		t.Logf("not root: unpacking %s with dpkg-deb -x instead of installing it", filepath.Base(deb))
		run(t, nil, "dpkg-deb", "-x", deb, root)
	}
	usr := filepath.Join(root, "usr")
	env := []string{"PATH=" + filepath.Join(usr, "bin") + ":/usr/bin:/bin", "HOME=" + t.TempDir(),
		"KANDEV_EXEC_STATE_DIR=" + filepath.Join(t.TempDir(), "state"), "NO_COLOR=1"}
	// exe runs args in env, a name found on env's PATH (through env(1)),
	// as a shell of this machine would find it.
	exe := func(args ...string) *exec.Cmd {
		cmd := exec.Command("env", args...)
		cmd.Env = env
		return cmd
	}

	t.Run("version", func(t *testing.T) {
		out, err := exe("kandev-exec", "version", "--json").Output()
		var v struct {
			Version string
			Helpers []helperbin.EmbeddedHelper
		}
		if err != nil || json.Unmarshal(out, &v) != nil || v.Version != version || len(v.Helpers) != len(helperbin.Platforms) {
			t.Fatalf("kandev-exec version --json: %v: %s", err, out)
		}
	})

	t.Run("bash completion", func(t *testing.T) {
		const system = "/usr/share/bash-completion/bash_completion"
		if _, err := os.Stat(system); err != nil {
			t.Fatalf("bash-completion is needed (apt-get install bash-completion; .ci/run does): %v", err)
		}
		// bash-completion finds the script in the package's directory, as
		// it would in /usr/share, the first time kandev-exec is completed.
		script := `source ` + system + `
__load_completion kandev-exec || exit 3
complete() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; __start_kandev-exec; echo "${COMPREPLY[*]}"; }
complete kandev-exec ho
complete kandev-exec host t`
		cmd := exe("bash", "--norc", "--noprofile", "-c", script)
		cmd.Env = append(cmd.Env, "XDG_DATA_DIRS="+filepath.Join(usr, "share"))
		out, err := cmd.Output()
		if err != nil || string(out) != "host\ntest trust\n" {
			t.Fatalf("completion: %v: %q", err, out)
		}
	})

	t.Run("files in their system places", func(t *testing.T) {
		for dst, want := range map[string]string{
			"share/zsh/vendor-completions/_kandev-exec":             "completions/kandev-exec.zsh",
			"share/fish/vendor_completions.d/kandev-exec.fish":      "completions/kandev-exec.fish",
			"share/doc/kandev-exec/copyright":                       "LICENSE",
			"lib/systemd/user/kandev-exec-sweep.service":            "packaging/kandev-exec-sweep.service",
			"lib/systemd/user/kandev-exec-sweep.timer":              "packaging/kandev-exec-sweep.timer",
			"share/doc/kandev-exec/examples/kandev-exec-sweep.cron": "packaging/kandev-exec-sweep.cron",
		} {
			if !bytes.Equal(readFile(t, filepath.Join(usr, dst)), readFile(t, filepath.Join(src, want))) {
				t.Errorf("/usr/%s is not the repository's %s", dst, want)
			}
		}
		for _, page := range manPages(t, src) {
			got := gunzip(t, readFile(t, filepath.Join(usr, "share", "man", "man1", page+".gz")))
			if !bytes.Equal(got, readFile(t, filepath.Join(src, "man", page))) {
				t.Errorf("/usr/share/man/man1/%s.gz is not man/%s", page, page)
			}
		}
	})

	// What the timer's service and the cron line run, every 15 minutes,
	// is the installed CLI's sweep, and it works.
	t.Run("scheduled sweep", func(t *testing.T) {
		unit := string(readFile(t, filepath.Join(usr, "lib", "systemd", "user", "kandev-exec-sweep.service")))
		timer := string(readFile(t, filepath.Join(usr, "lib", "systemd", "user", "kandev-exec-sweep.timer")))
		cron := string(readFile(t, filepath.Join(usr, "share", "doc", "kandev-exec", "examples", "kandev-exec-sweep.cron")))
		start := regexp.MustCompile(`(?m)^ExecStart=(\S+) sweep$`).FindStringSubmatch(unit)
		line := regexp.MustCompile(`(?m)^\*/15 \* \* \* \* (\S+) sweep `).FindStringSubmatch(cron)
		if start == nil || line == nil || !strings.Contains(timer, "\nOnCalendar=*:0/15\n") {
			t.Fatalf("want ExecStart=BIN sweep, OnCalendar=*:0/15 and */15 * * * * BIN sweep:\n%s\n%s\n%s", unit, timer, cron)
		}
		for _, bin := range []string{start[1], line[1]} {
			if bin != "/usr/bin/kandev-exec" {
				t.Fatalf("the schedule runs %s, not the package's /usr/bin/kandev-exec", bin)
			}
			out, err := exe(filepath.Join(root, bin), "sweep").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "No cleanup job is due") {
				t.Fatalf("%s sweep: %v\n%s", bin, err, out)
			}
		}
	})
}
