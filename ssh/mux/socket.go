// Package mux shares one SSH connection among kandev-exec commands, as
// OpenSSH's ControlMaster does: a master process holds the connection
// it dialled, every pin checked, and serves it on a unix socket in a
// directory only this user can open; a later command connects there
// instead of dialling and authenticating again. The socket speaks SSH
// (an in-process server relaying each channel and request to the held
// connection), not OpenSSH's multiplexing protocol, so it never lives at
// the ssh config's ControlPath.
package mux

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// maxSocketPath is the longest unix socket path every supported system
// binds (macOS allows 104 bytes with the terminating NUL, Linux 108).
const maxSocketPath = 103

// Socket is the path of the master of host for one way of reaching it:
// identity is everything a connection depends on (address, user, hops,
// pins, CAs), so a host whose pins or address change never reaches a
// master dialled with the old ones. The host's name comes first in its
// own digest, for HostSockets.
func Socket(dir, host string, identity ...string) string {
	id := sha256.Sum256([]byte(strings.Join(append([]string{host}, identity...), "\x00")))
	return filepath.Join(dir, hostPrefix(host)+hex.EncodeToString(id[:8])+".sock")
}

func hostPrefix(host string) string {
	h := sha256.Sum256([]byte(host))
	return hex.EncodeToString(h[:4]) + "-"
}

// HostSockets lists the sockets of host's masters in dir.
func HostSockets(dir, host string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, hostPrefix(host)+"*.sock"))
}

// CheckDir refuses a socket directory another user could reach into: it
// must be this user's, never a link, and open to nobody else (mode 0700;
// a socket anyone may connect to is only as private as its directory).
func CheckDir(dir string) error {
	if err := fsx.CheckPrivate(dir, os.Getuid(), true); err != nil {
		return fmt.Errorf("connection reuse refused: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("connection reuse refused: %s is mode %o, open to other users; run `chmod 700 %s`", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// checkPath refuses a socket path the system cannot bind.
func checkPath(path string) error {
	if len(path) > maxSocketPath {
		return fmt.Errorf("connection reuse off: the socket path %s is longer than %d bytes; use a shorter --state-dir", path, maxSocketPath)
	}
	return nil
}
