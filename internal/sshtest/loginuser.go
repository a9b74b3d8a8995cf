package sshtest

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// loginUser is the non-root user WithLoginUser made.
type loginUser struct {
	uid, gid int
	home     string
}

// WithLoginUser logs in as a user made for this test (useradd, removed
// when the test ends) with a home of its own under the test's directory:
// the flow as a login user without root's rights. It needs root, as CI
// has. The server's files that sshd reads as the user (its authorized
// keys) are made readable to it.
func WithLoginUser() Option {
	return func(s *Server) {
		t := s.t
		if os.Geteuid() != 0 {
			t.Fatal("sshtest: WithLoginUser makes a user with useradd and needs root (CI runs as root)")
		}
		name := "kxt" + strings.ToLower(rand.Text()[:10])
		// sshd opens the authorized keys as the user: every directory on
		// the way must let it through.
		for _, d := range []string{filepath.Dir(s.dir), s.dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatalf("sshtest: %v", err)
			}
		}
		// "*": no password logs in, yet the account is not locked (sshd
		// refuses a locked one even a key).
		home := filepath.Join(s.dir, "home")
		if out, err := exec.Command("useradd", "-M", "-d", home, "-s", "/bin/sh", "-p", "*", name).CombinedOutput(); err != nil {
			t.Fatalf("sshtest: useradd %s: %v: %s", name, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", "-f", name).CombinedOutput(); err != nil {
				t.Errorf("sshtest: userdel %s: %v: %s", name, err, out)
			}
		})
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("sshtest: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatalf("sshtest: %v", err)
		}
		if err := os.Chown(home, uid, gid); err != nil {
			t.Fatalf("sshtest: %v", err)
		}
		s.user, s.login = name, &loginUser{uid: uid, gid: gid, home: home}
	}
}

// Home is the login user's home directory: WithLoginUser's, else the
// current user's.
func (s *Server) Home() string {
	if s.login != nil {
		return s.login.home
	}
	home, _ := os.UserHomeDir()
	return home
}

// shareAuthorizedKeys lets the login user read the authorized keys.
func (s *Server) shareAuthorizedKeys() error {
	if s.login == nil {
		return nil
	}
	if err := os.Chown(s.authorizedKeysPath(), s.login.uid, s.login.gid); err != nil {
		return fmt.Errorf("share the authorized keys: %w", err)
	}
	return nil
}
