package sshtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

const (
	dropbearPath    = "/usr/sbin/dropbear"
	dropbearKeyPath = "/usr/bin/dropbearkey"
)

// NewDropbear starts Dropbear, the server of small boxes and routers, on a
// free 127.0.0.1 port, and stops it when the test ends. It takes the same
// options as NewServer where Dropbear has an equivalent (host key types,
// withheld commands, forwarding off); its host keys are made by
// dropbearkey. Dropbear reads authorized keys only from the login user's
// ~/.ssh/authorized_keys, so the fixture adds its keys there, each line
// marked with this process, and removes them when the test ends.
func NewDropbear(t testing.TB, opts ...Option) *Server {
	t.Helper()
	for _, p := range []string{dropbearPath, dropbearKeyPath} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("sshtest: %s is missing (run `apt-get install dropbear-bin`): %v", p, err)
		}
	}
	s := newServer(t, opts)
	s.dropbear = true
	if s.maxSessions != defaultMaxSessions {
		t.Fatal("sshtest: Dropbear has no MaxSessions")
	}
	return s.start()
}

// dropbearHostKey makes a host key of keyType with dropbearkey, in its own
// format, and reads the public half it prints.
func dropbearHostKey(path, keyType string) (ssh.PublicKey, error) {
	args := []string{"-t", keyType, "-f", path}
	switch keyType {
	case KeyECDSA:
		args = append(args, "-s", "256")
	case KeyRSA:
		args = append(args, "-s", "2048")
	}
	if out, err := exec.Command(dropbearKeyPath, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dropbearkey %v: %v: %s", args, err, out)
	}
	out, err := exec.Command(dropbearKeyPath, "-y", "-f", path).Output()
	if err != nil {
		return nil, fmt.Errorf("dropbearkey -y: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l)); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("dropbearkey -y printed no public key: %s", out)
}

// dropbearCommand is Dropbear in the foreground, logging to stderr,
// password logins off, passing its environment (PATH, the pyenv bound of
// writeSSHDConfig) to sessions.
func (s *Server) dropbearCommand() (*exec.Cmd, error) {
	args := []string{"-F", "-E", "-e", "-s", "-p", fmt.Sprintf("127.0.0.1:%d", s.port), "-P", filepath.Join(s.dir, "dropbear.pid")}
	for _, k := range s.hostKeys {
		args = append(args, "-r", k.path)
	}
	if !s.tcpForwarding || s.disableForwarding {
		args = append(args, "-j", "-k")
	}
	cmd := exec.Command(dropbearPath, args...)
	cmd.Env = append(os.Environ(), "PYENV_REHASH_TIMEOUT=1")
	if s.pathDir != "" {
		cmd.Env = append(cmd.Env, "PATH="+s.pathDir)
	}
	return cmd, nil
}

// homeAuthorizedKeys is the login user's ~/.ssh/authorized_keys, the one
// file Dropbear reads; lines carry a marker naming the test process, so a
// test that died without its cleanup leaves nothing the next one keeps.
type homeAuthorizedKeys struct{ path string }

const keysMarker = "kandev-exec-sshtest-pid-"

// homeKeySeq numbers this process's lines: a server's directory name
// (t.TempDir's 001, 002, ...) repeats across tests, so it cannot tell
// one test's line from another's.
var homeKeySeq atomic.Int64

func openHomeAuthorizedKeys() (homeAuthorizedKeys, error) {
	u, err := user.Current()
	if err != nil {
		return homeAuthorizedKeys{}, err
	}
	dir := filepath.Join(u.HomeDir, ".ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return homeAuthorizedKeys{}, err
	}
	return homeAuthorizedKeys{path: filepath.Join(dir, "authorized_keys")}, nil
}

// edit rewrites the file under a lock every test process shares: lines
// of dead test processes and those drop says go, add is appended. The
// new file is renamed into place, so sshd and Dropbear never read half of it.
func (h homeAuthorizedKeys) edit(drop func(line string) bool, add string) error {
	lock, err := os.OpenFile(h.path+".sshtest-lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	old, err := os.ReadFile(h.path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var b strings.Builder
	for _, l := range strings.Split(string(old), "\n") {
		if l != "" && !staleMarker(l) && !drop(l) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString(add)
	tmp := h.path + ".sshtest-new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, h.path)
}

// staleMarker says whether line is a fixture's whose process is gone.
func staleMarker(line string) bool {
	i := strings.Index(line, keysMarker)
	if i < 0 {
		return false
	}
	pid, err := strconv.Atoi(strings.SplitN(line[i+len(keysMarker):], "-", 2)[0])
	return err == nil && syscall.Kill(pid, 0) == syscall.ESRCH
}

// authorizeHomeKey adds pub for this server and removes it when the test ends.
func (s *Server) authorizeHomeKey(pub ssh.PublicKey) error {
	h, err := openHomeAuthorizedKeys()
	if err != nil {
		return err
	}
	mark := fmt.Sprintf("%s%d-%d", keysMarker, os.Getpid(), homeKeySeq.Add(1))
	line := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(pub)), "\n") + " " + mark + "\n"
	if err := h.edit(func(string) bool { return false }, line); err != nil {
		return err
	}
	s.t.Cleanup(func() {
		if err := h.edit(func(l string) bool { return strings.HasSuffix(l, " "+mark) }, ""); err != nil {
			s.t.Errorf("sshtest: remove a key from %s: %v", h.path, err)
		}
	})
	return nil
}
