package taskdir

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
)

// Once an agent has run, a checkout's configuration, attributes and hooks
// are its own, so git runs there as the proof runs it (docs/security.md):
// pinned to the checkout's gitdir and worktree, with everything of the
// checkout's configuration that could run a program or redirect a fetch
// overridden by command-scope configuration, and with the login user's
// global and system configuration applying. The fetch names the launch
// URL, never a remote of the checkout. What cannot be overridden refuses
// the prepare, naming the key.

const maxConfig = 1 << 20

// checkoutOverrides apply to every git run in a checkout beyond
// gitsafe.NoCode: a checkout never recurses into submodules, whose
// configuration nothing here has read.
var checkoutOverrides = [][2]string{{"submodule.recurse", "false"}}

// defaultProtocols are the transports git allows without configuration;
// they replace what a checkout's protocol.* keys allow.
const defaultProtocols = "file:git:http:https:ssh"

// inCheckout reads dir's own configuration and returns the runner of git
// in it, or an unsafe_checkout error naming the first key no override can
// neutralise.
func inCheckout(ctx context.Context, dir, url string) (runner, error) {
	gitDir := filepath.Join(dir, ".git")
	files := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree")}
	cfg, err := gitsafe.Read(files, func(f string) ([]byte, error) { return fsx.ReadFileMax(f, maxConfig) })
	if err != nil {
		return runner{}, errorf(CodeUnsafeCheckout, "%s: its git configuration cannot be read (%v); fix or remove it, then resume", dir, err)
	}
	if e, refused := refusedKey(cfg, url); refused {
		return runner{}, errorf(CodeUnsafeCheckout, "%s: the checkout's git configuration sets %s (%s), which could run a program or redirect the fetch; remove it (git -C %s config --unset-all '%s'), then resume",
			dir, e.Key(), e.Where, dir, e.Key())
	}
	over := append(append(append([][2]string{}, gitsafe.NoCode...), checkoutOverrides...), cfg.FilterOverrides()...)
	env := append(gitsafe.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	var operator []string
	if sets(cfg, "core", "sshcommand") || setsCredentialHelper(cfg) {
		if operator, err = operatorConfig(ctx); err != nil {
			return runner{}, err
		}
	}
	if sets(cfg, "core", "sshcommand") {
		o, e := sshCommand(operator)
		over, env = append(over, o...), append(env, e...)
	}
	if setsCredentialHelper(cfg) {
		over = append(over, credentialHelpers(operator)...)
	}
	if hasSection(cfg, "protocol") && os.Getenv("GIT_ALLOW_PROTOCOL") == "" {
		env = append(env, "GIT_ALLOW_PROTOCOL="+defaultProtocols)
	}
	env = append(env, gitsafe.ConfigEnv(over)...)
	pin := []string{"--no-pager", "--git-dir=" + gitDir, "--work-tree=" + dir}
	return runner{dir: dir, pin: pin, env: env}, nil
}

// refusedKey names the first key of the checkout that no override can
// neutralise: an include (keys unread), a URL rewrite or a remote named
// as the launch URL (either would redirect the fetch), the checkout's
// own HTTP transport settings (a proxy or certificate of its choosing),
// and the programs git runs that command scope cannot switch off.
func refusedKey(cfg gitsafe.Config, url string) (gitsafe.Entry, bool) {
	for _, e := range cfg {
		refused := e.IsInclude() || e.Section == "http" ||
			e.Section == "url" && (e.Name == "insteadof" || e.Name == "pushinsteadof") ||
			e.Section == "remote" && e.Subsection == url ||
			e.Section == "core" && e.Subsection == "" && (e.Name == "gitproxy" || e.Name == "askpass" || e.Name == "alternaterefscommand")
		if refused {
			return e, true
		}
	}
	return gitsafe.Entry{}, false
}

func sets(cfg gitsafe.Config, section, name string) bool {
	for _, e := range cfg {
		if e.Section == section && e.Subsection == "" && e.Name == name {
			return true
		}
	}
	return false
}

func hasSection(cfg gitsafe.Config, section string) bool {
	for _, e := range cfg {
		if e.Section == section {
			return true
		}
	}
	return false
}

func setsCredentialHelper(cfg gitsafe.Config) bool {
	for _, e := range cfg {
		if e.Section == "credential" && e.Name == "helper" {
			return true
		}
	}
	return false
}

// operatorConfig lists the login user's system and global configuration
// (key, value pairs in git's order), read outside any repository.
func operatorConfig(ctx context.Context) ([]string, error) {
	r := runner{dir: "/", env: append(gitsafe.Environ(), "GIT_DIR=/dev/null", "GIT_TERMINAL_PROMPT=0")}
	out, tail, err := r.exec(ctx, []string{"config", "--includes", "--list", "-z"})
	if err != nil {
		return nil, gitError(ctx, "/", []string{"config", "--list"}, err, tail)
	}
	var kv []string
	for _, item := range strings.Split(out, "\x00") {
		if k, v, ok := strings.Cut(item, "\n"); ok {
			kv = append(kv, k, v)
		}
	}
	return kv, nil
}

// sshCommand replaces the checkout's core.sshCommand with the operator's:
// theirs from configuration, else GIT_SSH_COMMAND or GIT_SSH from the
// environment (which git ranks as it always does), else plain ssh.
func sshCommand(operator []string) (over [][2]string, env []string) {
	for i := len(operator) - 2; i >= 0; i -= 2 {
		if strings.EqualFold(operator[i], "core.sshcommand") {
			return [][2]string{{"core.sshCommand", operator[i+1]}}, nil
		}
	}
	switch {
	case os.Getenv("GIT_SSH_COMMAND") != "":
		return nil, nil
	case os.Getenv("GIT_SSH") != "":
		// The shell git runs the command with expands it: no quoting.
		return nil, []string{`GIT_SSH_COMMAND="$GIT_SSH"`}
	}
	return [][2]string{{"core.sshCommand", "ssh"}}, nil
}

// credentialHelpers clears every helper git collected (an empty value
// does), then names the operator's again, each under its own key.
func credentialHelpers(operator []string) [][2]string {
	over := [][2]string{{"credential.helper", ""}}
	for i := 0; i+1 < len(operator); i += 2 {
		k := operator[i]
		if strings.HasPrefix(strings.ToLower(k), "credential.") && strings.HasSuffix(strings.ToLower(k), ".helper") {
			over = append(over, [2]string{k, operator[i+1]})
		}
	}
	return over
}
