package reclaim

import (
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel (before 5.6) or a seccomp filter
// refuses openat2; from then on the device check and the mount table
// stand in for RESOLVE_NO_XDEV.
var noOpenat2 atomic.Bool

// openBeneath opens the directory name in parent with openat2, which
// refuses a link anywhere (RESOLVE_NO_SYMLINKS), leaving parent
// (RESOLVE_BENEATH) and crossing any mount, bind mounts of the same
// device included (RESOLVE_NO_XDEV: EXDEV).
func openBeneath(parent int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for attempt := 0; !noOpenat2.Load(); attempt++ {
		how := unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV}
		fd, err := unix.Openat2(parent, name, &how)
		switch {
		case (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && attempt < 3:
			// A concurrent rename: the kernel asks to try again.
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			noOpenat2.Store(true)
		default:
			return fd, err
		}
	}
	return unix.Openat(parent, name, flags, 0)
}

// canSeeBindMounts reports whether openBeneath refuses a bind mount of
// the same device; when not, the mount table is consulted as well.
func canSeeBindMounts() bool { return !noOpenat2.Load() }

// renameNoReplace renames from to to in dir, failing where to exists
// (a directory made there since must not be replaced, even empty).
func renameNoReplace(dir int, from, to string) error {
	return unix.Renameat2(dir, from, dir, to, unix.RENAME_NOREPLACE)
}

// direntBufs are getdents buffers, one per listing under way: large
// enough that most directories come in one read (and the read saying
// there is no more), reused so that a walk does not allocate one per
// directory.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readNames lists the directory open at fd from where its offset is,
// without "." and "..".
func readNames(fd int) ([]string, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, *bp)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, err
		case n <= 0:
			return names, nil
		}
		_, _, names = unix.ParseDirent((*bp)[:n], -1, names)
	}
}
