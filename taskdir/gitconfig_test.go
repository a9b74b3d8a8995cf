package taskdir

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A resume runs git in a checkout the agent has written. Nothing of its
// configuration, hooks or remotes may run or redirect the fetch, and the
// fetch still brings what the launch URL has now.

// operatorGitconfig makes text the login user's global git configuration
// for the rest of the test.
func operatorGitconfig(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", path)
}

// agentWrites is a launched task whose agent then ran: url is what the
// task was launched with, dir its checkout, marker the file any code of
// the checkout's choosing would create.
type agentWrites struct {
	req                     PrepareRequest
	bare, work, dir, marker string
}

// launched makes the task, launched with url(bare) (nil: bare itself).
func launched(t *testing.T, url func(bare string) string) *agentWrites {
	t.Helper()
	bare, work := bareRepo(t, "README")
	launch := bare
	if url != nil {
		launch = url(bare)
	}
	req := prepareReq(t.TempDir(), launch)
	res := mustPrepare(t, req)
	return &agentWrites{req: req, bare: bare, work: work, dir: res.TaskDirAbs, marker: filepath.Join(t.TempDir(), "ran")}
}

func (a *agentWrites) config(t *testing.T, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		gitT(t, a.dir, "config", "--add", kv[i], kv[i+1])
	}
}

// resume moves origin on and prepares the task again.
func (a *agentWrites) resume(t *testing.T) (upstream string, err error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(a.work, "NEW"), []byte(time.Now().String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, a.work, "add", "NEW")
	gitT(t, a.work, "commit", "--quiet", "-m", "upstream moves on")
	gitT(t, a.work, "push", "--quiet", "origin", "HEAD:main")
	req := a.req
	req.Owner.OperationID = "op-2"
	_, err = Prepare(context.Background(), req)
	return gitT(t, a.work, "rev-parse", "HEAD"), err
}

func (a *agentWrites) noCodeRan(t *testing.T) {
	t.Helper()
	if _, err := os.Lstat(a.marker); err == nil {
		t.Fatalf("code of the checkout's configuration ran (%s exists)", a.marker)
	}
}

// fetched asserts the resume succeeded and brought the launch URL's tip.
func (a *agentWrites) fetched(t *testing.T, upstream string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got := gitT(t, a.dir, "rev-parse", "refs/remotes/origin/main"); got != upstream {
		t.Fatalf("origin/main = %s, want the launch URL's tip %s", got, upstream)
	}
}

func (a *agentWrites) touch() string { return "touch " + a.marker }

// operatorSSH makes the operator's core.sshCommand a stand-in for ssh
// that runs the remote command locally, or, once the file hang exists,
// writes its pid there and hangs. It returns the command's path.
func operatorSSH(t *testing.T, hang string) string {
	t.Helper()
	ssh := filepath.Join(t.TempDir(), "opssh")
	script := "#!/bin/sh\nshift\nexec sh -c \"$1\"\n"
	if hang != "" {
		script = "#!/bin/sh\nif [ -e " + hang + " ]; then echo $$ >" + hang + "; exec sleep 300; fi\nshift\nexec sh -c \"$1\"\n"
	}
	if err := os.WriteFile(ssh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	operatorGitconfig(t, "[core]\n\tsshCommand = "+ssh+"\n[ssh]\n\tvariant = simple\n")
	return ssh
}

// The checkout's core.sshCommand is replaced by the operator's: the task
// was launched over ssh (the operator's command stands in for ssh and
// runs the remote command locally), and the fetch still goes through it.
func TestResumeIgnoresCheckoutSSHCommand(t *testing.T) {
	operatorSSH(t, "")
	a := launched(t, func(bare string) string { return "somehost:" + bare })
	a.config(t, "core.sshCommand", a.touch()+"; false")
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)
}

// An operator who names ssh by GIT_SSH keeps it too.
func TestResumeIgnoresCheckoutSSHCommandUnderGitSSH(t *testing.T) {
	ssh := operatorSSH(t, "")
	operatorGitconfig(t, "[ssh]\n\tvariant = simple\n")
	t.Setenv("GIT_SSH", ssh)
	a := launched(t, func(bare string) string { return "somehost:" + bare })
	a.config(t, "core.sshCommand", a.touch()+"; false")
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)
}

// An ext:: remote the protocol allow-list lets through never runs, and a
// rewrite of the launch URL into one refuses the resume, naming the key.
func TestResumeIgnoresExtRemote(t *testing.T) {
	a := launched(t, nil)
	a.config(t, "protocol.ext.allow", "always", "protocol.allow", "always", "remote.evil.url", "ext::sh -c "+strings.ReplaceAll(a.touch(), " ", "% "),
		"fetch.recurseSubmodules", "true", "remote.origin.uploadpack", a.touch()+"; git-upload-pack")
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)

	rewrite := "url.ext::sh -c " + strings.ReplaceAll(a.touch(), " ", "% ") + ".insteadof"
	a.config(t, rewrite, a.bare)
	_, err = a.resume(t)
	a.noCodeRan(t)
	wantCode(t, err, CodeUnsafeCheckout)
	if fix := "git -C " + a.dir + " config --unset-all '" + rewrite + "'"; !strings.Contains(err.Error(), fix) {
		t.Fatalf("refusal does not name the key and its fix %q: %v", fix, err)
	}
	// The fix it names is enough.
	gitT(t, a.dir, "config", "--unset-all", rewrite)
	up, err = a.resume(t)
	a.fetched(t, up, err)
}

// The checkout's credential helpers are dropped and the operator's kept:
// git asked for a credential through the runner of the checkout gets the
// operator's, and the checkout's helper never runs.
func TestResumeIgnoresCheckoutCredentialHelper(t *testing.T) {
	operatorGitconfig(t, "[credential]\n\thelper = \"!f() { test $1 = get && echo username=op && echo password=operators; }; f\"\n")
	a := launched(t, nil)
	a.config(t, "credential.helper", "!"+a.touch(), "credential.https://example.com.helper", "!"+a.touch())
	g, err := inCheckout(context.Background(), a.dir, a.bare)
	if err != nil {
		t.Fatal(err)
	}
	credential := func(action, input string) string {
		cmd := exec.Command("git", append(g.pin, "credential", action)...)
		cmd.Dir, cmd.Env, cmd.Stdin = a.dir, g.env, strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("credential %s: %v\n%s", action, err, out)
		}
		return string(out)
	}
	// Every helper is told to store a credential that worked.
	credential("approve", "protocol=https\nhost=example.com\nusername=u\npassword=p\n\n")
	a.noCodeRan(t)
	if out := credential("fill", "protocol=https\nhost=example.com\n\n"); !strings.Contains(out, "password=operators") {
		t.Fatalf("credential fill did not reach the operator's helper:\n%s", out)
	}
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)
}

// Hooks of the checkout, in .git/hooks or wherever core.hooksPath points,
// never run: the fetch updates refs (reference-transaction) and the
// checkout of the task branch would run post-checkout.
func TestResumeRunsNoHook(t *testing.T) {
	a := launched(t, nil)
	otherBranch(t, a.dir) // the resume checks the task branch out again
	hooks := filepath.Join(t.TempDir(), "hooks")
	for _, d := range []string{filepath.Join(a.dir, ".git", "hooks"), hooks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"reference-transaction", "post-checkout", "pre-auto-gc", "fsmonitor-watchman"} {
			if err := os.WriteFile(filepath.Join(d, h), []byte("#!/bin/sh\n"+a.touch()+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.config(t, "core.hooksPath", hooks, "core.fsmonitor", a.touch(), "gc.auto", "1")
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)
}

// A checkout whose origin the agent pointed elsewhere is refused before
// any fetch; the checkout's own refspec for origin is never used (it
// would overwrite the task branch), nor its upload-pack.
func TestResumeFetchesOnlyTheLaunchURL(t *testing.T) {
	a := launched(t, nil)
	local := gitT(t, a.dir, "rev-parse", "HEAD")
	a.config(t, "remote.origin.fetch", "+refs/heads/main:refs/heads/kandev/task-1")
	up, err := a.resume(t)
	a.fetched(t, up, err)
	if got := gitT(t, a.dir, "rev-parse", "refs/heads/kandev/task-1"); got != local {
		t.Fatalf("task branch moved to %s by the checkout's refspec, want %s", got, local)
	}

	gitT(t, a.dir, "config", "protocol.ext.allow", "always")
	gitT(t, a.dir, "remote", "set-url", "origin", "ext::sh -c "+strings.ReplaceAll(a.touch(), " ", "% "))
	_, err = a.resume(t)
	a.noCodeRan(t)
	wantCode(t, err, CodeOriginMismatch)
}

// An include pulls in keys nothing has read: the resume is refused,
// naming the key, and nothing of the included file runs.
func TestResumeRefusesInclude(t *testing.T) {
	a := launched(t, nil)
	inc := filepath.Join(t.TempDir(), "evil.cfg")
	if err := os.WriteFile(inc, []byte("[core]\n\tfsmonitor = "+a.touch()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.config(t, "include.path", inc)
	_, err := a.resume(t)
	a.noCodeRan(t)
	wantCode(t, err, CodeUnsafeCheckout)
	if !strings.Contains(err.Error(), "include.path") {
		t.Fatalf("refusal does not name the key: %v", err)
	}
}

// A filter driver of the checkout, selected by its attributes, does not
// run when the task branch is checked out again.
func TestResumeRunsNoFilter(t *testing.T) {
	a := launched(t, nil)
	otherBranch(t, a.dir) // the resume writes README again, through any filter
	if err := os.WriteFile(filepath.Join(a.dir, ".git", "info", "attributes"), []byte("* filter=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.config(t, "filter.evil.smudge", a.touch()+"; cat", "filter.evil.clean", a.touch()+"; cat")
	up, err := a.resume(t)
	a.noCodeRan(t)
	a.fetched(t, up, err)
}

// otherBranch leaves dir on a new branch whose README differs from the
// task branch's, so a resume checks the task branch out and rewrites it.
func otherBranch(t *testing.T, dir string) {
	t.Helper()
	gitT(t, dir, "checkout", "--quiet", "-b", "other")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "commit", "--quiet", "-am", "other")
}
