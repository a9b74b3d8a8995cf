package reclaim

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// The checkout's configuration, attributes, hooks and remotes were
// written by the agent: no probe may run a program they name. Each test
// plants one, with a command that leaves a marker, and asserts the
// marker is absent after the proof; where the operator's own
// configuration is meant to apply instead, it leaves a marker of its own.

// marker is a command that creates a file, and the file.
func marker(t *testing.T, name string) (cmd, path string) {
	t.Helper()
	path = filepath.Join(physical(t, t.TempDir()), name)
	return "touch " + path, path
}

func noMarker(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the checkout's code ran during the proof: %s exists (%v)", path, err)
	}
}

// operatorConfig makes the login user's global git configuration the
// lines given, in place of whatever the test machine has.
func operatorConfig(t *testing.T, lines ...string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gitconfig")
	writeFile(t, p, strings.Join(lines, "\n")+"\n")
	t.Setenv("GIT_CONFIG_GLOBAL", p)
}

var testEpoch = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// touchTracked changes README's stat data, not its content, so that git
// status must read it again (and would run a clean filter or a hook).
func touchTracked(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(dir, "README"), testEpoch, testEpoch); err != nil {
		t.Fatal(err)
	}
}

// removedWithout proves a clean checkout removable after plant, and that
// the marker at path is absent.
func removedWithout(t *testing.T, tg func(root, bare string) Target, path string, plant func(t *testing.T, dir, bare string)) {
	t.Helper()
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	plant(t, dir, bare)
	wantResult(t, apply(t, tg(root, bare))[0], Remove, Removed, "")
	noMarker(t, path)
}

// A clean filter of the checkout's config, applied through
// .git/info/attributes, runs whenever git status re-reads a file.
func TestProbeRunsNoFilterDriver(t *testing.T) {
	cmd, path := marker(t, "filter-ran")
	removedWithout(t, plainT1, path, func(t *testing.T, dir, _ string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), "* filter=evil\n")
		gitT(t, dir, "config", "filter.evil.clean", cmd+"; cat")
		gitT(t, dir, "config", "filter.evil.process", cmd)
		touchTracked(t, dir)
	})
}

// core.fsmonitor names a hook git status runs.
func TestProbeRunsNoFsmonitor(t *testing.T) {
	cmd, path := marker(t, "fsmonitor-ran")
	removedWithout(t, plainT1, path, func(t *testing.T, dir, _ string) {
		hook := filepath.Join(dir, ".git", "fsmonitor-hook")
		writeFile(t, hook, "#!/bin/sh\n"+cmd+"\n")
		if err := os.Chmod(hook, 0o755); err != nil {
			t.Fatal(err)
		}
		gitT(t, dir, "config", "core.fsmonitor", hook)
	})
}

// Hooks, from .git/hooks or core.hooksPath: a status that refreshed the
// index on disk would run post-index-change.
func TestProbeRunsNoHooks(t *testing.T) {
	cmd, path := marker(t, "hook-ran")
	removedWithout(t, plainT1, path, func(t *testing.T, dir, _ string) {
		hooks := filepath.Join(dir, ".kandev", "hooks")
		for _, name := range []string{"post-index-change", "reference-transaction", "pre-auto-gc", "post-checkout", "fsmonitor-watchman"} {
			for _, d := range []string{hooks, filepath.Join(dir, ".git", "hooks")} {
				writeFile(t, filepath.Join(d, name), "#!/bin/sh\n"+cmd+"\n")
				if err := os.Chmod(filepath.Join(d, name), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		gitT(t, dir, "config", "core.hooksPath", hooks)
		touchTracked(t, dir)
	})
}

// Diff drivers and textconv: no probe diffs, so none can run.
func TestProbeRunsNoTextconv(t *testing.T) {
	cmd, path := marker(t, "textconv-ran")
	removedWithout(t, plainT1, path, func(t *testing.T, dir, _ string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), "* diff=evil\n")
		gitT(t, dir, "config", "diff.evil.textconv", cmd+"; cat")
		gitT(t, dir, "config", "diff.evil.command", cmd)
		gitT(t, dir, "config", "diff.external", cmd)
		touchTracked(t, dir)
	})
}

// A pager: git never pages what the probes read.
func TestProbeRunsNoPager(t *testing.T) {
	cmd, path := marker(t, "pager-ran")
	removedWithout(t, plainT1, path, func(t *testing.T, dir, _ string) {
		gitT(t, dir, "config", "core.pager", cmd)
		for _, c := range []string{"status", "ls-files", "rev-list", "cat-file", "for-each-ref"} {
			gitT(t, dir, "config", "pager."+c, cmd)
		}
	})
}

// An include pulls in keys the proof has not read (here a filter driver
// that would not be switched off): nothing runs, and the directory is
// kept, naming the key.
func TestProbeRefusesInclude(t *testing.T) {
	for _, key := range []string{"include.path", `includeIf.gitdir:/.path`} {
		t.Run(key, func(t *testing.T) {
			cmd, path := marker(t, "included-filter-ran")
			keptFor(t, UnsafeGitConfig, strings.ToLower(key), func(t *testing.T, dir, _, _ string) {
				writeFile(t, filepath.Join(dir, ".git", "evil.cfg"), "[filter \"evil\"]\n\tclean = "+cmd+"; cat\n")
				writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), "* filter=evil\n")
				gitT(t, dir, "config", key, "evil.cfg")
				touchTracked(t, dir)
			})
			noMarker(t, path)
		})
	}
}

// An ext:: remote, allowed by the checkout's protocol.ext.allow: with
// the launch record the checkout's remotes are never asked (the launch
// URL has the commits: removed); without it, a remote helper transport
// does not count (kept).
func TestProbeRunsNoExtRemote(t *testing.T) {
	cmd, path := marker(t, "ext-ran")
	plant := func(t *testing.T, dir string) {
		gitT(t, dir, "remote", "set-url", "origin", "ext::sh -c "+strings.ReplaceAll(cmd, " ", "% "))
		gitT(t, dir, "config", "protocol.ext.allow", "always")
		gitT(t, dir, "config", "protocol.allow", "always")
	}
	t.Run("launched", func(t *testing.T) {
		removedWithout(t, launchedT1, path, func(t *testing.T, dir, _ string) { plant(t, dir) })
	})
	t.Run("unrecorded", func(t *testing.T) {
		keptFor(t, UnpushedCommits, "origin (a remote helper transport)", func(t *testing.T, dir, _, _ string) { plant(t, dir) })
		noMarker(t, path)
	})
}

// A partial clone fetches missing objects through its promisor remote,
// with the checkout's transport settings: the probes reach no network.
// An object the repository lacks holds nothing here to lose.
func TestProbeRunsNoLazyFetch(t *testing.T) {
	cmd, path := marker(t, "lazy-fetch-ran")
	removedWithout(t, launchedT1, path, func(t *testing.T, dir, _ string) {
		gitT(t, dir, "config", "core.repositoryFormatVersion", "1")
		gitT(t, dir, "config", "extensions.partialClone", "origin")
		gitT(t, dir, "config", "remote.origin.promisor", "true")
		gitT(t, dir, "config", "remote.origin.url", "ext::sh -c "+strings.ReplaceAll(cmd, " ", "% "))
		gitT(t, dir, "config", "protocol.ext.allow", "always")
		// A ref to an object the repository lacks: asking its type fetches.
		writeFile(t, filepath.Join(dir, ".git", "refs", "wip", "gone"), strings.Repeat("1", 40)+"\n")
	})
}

// url.<base>.insteadOf in the checkout would rewrite the launch URL into
// a command; ls-remote runs outside the checkout, so it cannot.
func TestProbeIgnoresCheckoutInsteadOf(t *testing.T) {
	cmd, path := marker(t, "insteadof-ran")
	removedWithout(t, launchedT1, path, func(t *testing.T, dir, bare string) {
		gitT(t, dir, "config", "url.ext::sh -c "+strings.ReplaceAll(cmd, " ", "% ")+"% #.insteadOf", bare)
		gitT(t, dir, "config", "protocol.ext.allow", "always")
	})
}

// core.sshCommand of the checkout, with an ssh launch URL to a real
// sshd: the operator's own ssh settings (their global git config here)
// reach it, and the checkout's command never runs.
func TestProbeRunsNoCheckoutSSHCommand(t *testing.T) {
	srv := sshtest.NewServer(t)
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, sshConfig, srv.HostEntry("githost"))
	opCmd, opPath := marker(t, "operator-ssh-ran")
	operatorConfig(t, "[core]", "\tsshCommand = "+opCmd+" && ssh -F "+sshConfig)
	cmd, path := marker(t, "checkout-ssh-ran")
	sshURL := func(root, bare string) Target { return launched(root, "t-1", "task-1", "githost:"+bare) }
	removedWithout(t, sshURL, path, func(t *testing.T, dir, _ string) {
		gitT(t, dir, "config", "core.sshCommand", cmd+"; false")
		gitT(t, dir, "config", "ssh.variant", "simple")
	})
	if _, err := os.Lstat(opPath); err != nil {
		t.Fatalf("the operator's ssh settings were not used: %v", err)
	}
}

// A credential helper of the checkout, with an https launch URL that
// asks for credentials: the operator's helper answers, the checkout's
// never runs.
func TestProbeRunsNoCheckoutCredentialHelper(t *testing.T) {
	bare, _ := origin(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "operator" || p != "secret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
			Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1"}}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	operatorConfig(t, "[credential]", "\thelper = \"!f() { echo username=operator; echo password=secret; }; f\"")
	cmd, path := marker(t, "credential-helper-ran")
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	gitT(t, dir, "config", "credential.helper", "!"+cmd+"; echo username=agent; echo password=wrong; :")
	gitT(t, dir, "config", "core.askPass", "/bin/sh -c '"+cmd+"'")
	tg := launched(root, "t-1", "task-1", srv.URL+"/"+filepath.Base(bare))
	wantResult(t, apply(t, tg)[0], Remove, Removed, "")
	noMarker(t, path)
}
