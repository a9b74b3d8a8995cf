//go:build !linux

package reclaim

import (
	"os"

	"golang.org/x/sys/unix"
)

// openBeneath opens the directory name in parent without following a
// link. Other systems have no openat2; the device check in dirFD.open
// stands in for it (macOS has no bind mounts).
func openBeneath(parent int, name string) (int, error) {
	return unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// canSeeBindMounts: without bind mounts, the device check sees every
// mount.
func canSeeBindMounts() bool { return true }

// renameNoReplace renames from to to in dir, failing where to exists
// (a directory made there since must not be replaced, even empty).
func renameNoReplace(dir int, from, to string) error {
	return unix.RenameatxNp(dir, from, dir, to, unix.RENAME_EXCL)
}

// readNames lists the directory open at fd, through a descriptor of its
// own ("." opened again: the system's readdir keeps its place there).
func readNames(fd int) ([]string, error) {
	own, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(own), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
