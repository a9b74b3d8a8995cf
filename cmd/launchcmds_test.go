package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// launchCondition adds [root]: creating a local user needs it.
func launchCondition(cond string) (bool, error) {
	if cond == "root" {
		return os.Geteuid() == 0, nil
	}
	return false, nil
}

// waitfile PATH [SECONDS]: wait until PATH exists (30 s by default), so a
// transcript can act at a known point of a command in the background.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile PATH [SECONDS]")
	}
	wait := 30 * time.Second
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		wait = time.Duration(n) * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within %s", args[0], wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fishUser is the local account whose login shell is fish.
const fishUser = "kfish"

// fishuser VAR: make sure the local user kfish exists with fish as its
// login shell and can log in to the fixture's servers with the fixture's
// user key, and set VAR to a fresh directory kfish owns (removed when the
// transcript ends). Needs root; guard with [root] and [exec:fish].
func (fx *fixture) cmdFishUser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fishuser VAR")
	}
	fish, err := exec.LookPath("fish")
	ts.Check(err)
	uid, gid := fx.loginUser(ts, fishUser, "", fish)
	dir, err := os.MkdirTemp("", "kandev-fish")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Check(os.Chown(dir, uid, gid))
	ts.Check(os.Chmod(dir, 0o755))
	ts.Setenv(args[0], dir)
}

// loginUser makes sure the local user name exists with shell as its login
// shell (and home as its home, when given) and can log in to target with
// the fixture's user key; it returns its uid and gid. Needs root.
func (fx *fixture) loginUser(ts *testscript.TestScript, name, home, shell string) (uid, gid int) {
	if _, err := user.Lookup(name); err != nil {
		args := []string{"-m", "-s", shell, name}
		if home != "" {
			args = append([]string{"-d", home}, args...)
		}
		// Another transcript may be creating it at the same time.
		if out, err := exec.Command("useradd", args...).CombinedOutput(); err != nil {
			if _, lerr := user.Lookup(name); lerr != nil {
				ts.Fatalf("useradd: %v\n%s", err, out)
			}
		}
	}
	// A locked password ("!") makes sshd refuse the account without PAM.
	if out, err := exec.Command("usermod", "-p", "*", "-s", shell, name).CombinedOutput(); err != nil {
		ts.Fatalf("usermod: %v\n%s", err, out)
	}
	u, err := user.Lookup(name)
	ts.Check(err)
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	// sshd reads AuthorizedKeysFile as the user logging in: the fixture's
	// file, shared by all users, must be reachable by this one.
	keys := filepath.Join(filepath.Dir(fx.servers["target"].UserKeyPath), "authorized_keys")
	for d := filepath.Dir(keys); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		ts.Check(err)
		ts.Check(os.Chmod(d, fi.Mode().Perm()|0o011))
	}
	ts.Check(os.Chmod(keys, 0o644))
	return uid, gid
}

// shimUser is the local account whose login shell puts programs a
// transcript plants first in PATH: a host whose uname or git lie.
const (
	shimUser = "kshim"
	shimHome = "/home/kshim"
)

// shimShell is kshim's login shell. The directory for the sshd port the
// connection reached comes first in PATH, so transcripts running at the
// same time plant their programs apart.
const shimShell = `#!/bin/sh
PATH="$HOME/port-${SSH_CONNECTION##* }:$PATH"
export PATH
exec /bin/sh "$@"
`

// shimuser VAR: make sure kshim exists and can log in to target, and set
// VAR to the empty directory that comes first in its PATH there (removed
// when the transcript ends). Needs root.
func (fx *fixture) cmdShimUser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: shimuser VAR")
	}
	if os.Geteuid() != 0 {
		ts.Fatalf("shimuser creates the local user %s: run the tests as root", shimUser)
	}
	shell := filepath.Join(shimHome, ".login-shell")
	fx.loginUser(ts, shimUser, shimHome, shell)
	// Written aside and renamed: another transcript may be running it.
	tmp := fmt.Sprintf("%s.%d", shell, os.Getpid())
	ts.Check(os.WriteFile(tmp, []byte(shimShell), 0o755))
	ts.Check(os.Chmod(tmp, 0o755))
	ts.Check(os.Rename(tmp, shell))
	dir := filepath.Join(shimHome, fmt.Sprintf("port-%d", fx.servers["target"].Port()))
	ts.Check(os.RemoveAll(dir))
	ts.Check(os.Mkdir(dir, 0o755))
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Setenv(args[0], dir)
}
