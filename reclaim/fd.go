package reclaim

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The proof's walk and the removal reach every entry through its parent
// directory's descriptor, never by a path string: a directory swapped for
// a link after it was checked is not followed, and a mount point is not
// crossed.

// errMount is an entry that is another filesystem or a bind mount.
var errMount = errors.New("a mount point")

// dirFD is a directory opened without following a link. It holds the
// bare descriptor (no os.File: a walk opens every directory of every
// tree, twice in an apply), so each is closed by its opener.
type dirFD struct {
	sys    int
	path   string // for messages and the mount table
	st     unix.Stat_t
	listed bool // read before: the next listing starts over
}

// openDirPath opens an absolute path whose ancestors were checked (only
// the login user and root can change them), refusing a link at its end.
func openDirPath(path string) (*dirFD, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return newDirFD(fd, path)
}

func newDirFD(fd int, path string) (*dirFD, error) {
	d := &dirFD{sys: fd, path: path}
	if err := unix.Fstat(fd, &d.st); err != nil {
		d.close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	return d, nil
}

func (d *dirFD) fd() int { return d.sys }

func (d *dirFD) close() { unix.Close(d.sys) }

func (d *dirFD) identity() Identity { return Identity{Dev: uint64(d.st.Dev), Ino: uint64(d.st.Ino)} }

// lstat describes name in d itself, never a link's target.
func (d *dirFD) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		err = fmt.Errorf("stat %s: %w", filepath.Join(d.path, name), err)
	}
	return st, err
}

// open opens the directory name in d: never through a link, and never
// into another filesystem or a bind mount (errMount), where the system
// can tell.
func (d *dirFD) open(name string) (*dirFD, error) {
	path := filepath.Join(d.path, name)
	fd, err := openBeneath(d.fd(), name)
	if errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%s is %w", path, errMount)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	sub, err := newDirFD(fd, path)
	if err != nil {
		return nil, err
	}
	if sub.st.Dev != d.st.Dev {
		sub.close()
		return nil, fmt.Errorf("%s is %w (device %d, not %d)", path, errMount, sub.st.Dev, d.st.Dev)
	}
	return sub, nil
}

// names lists d's entries from the start.
func (d *dirFD) names() ([]string, error) {
	if d.listed {
		if _, err := unix.Seek(d.sys, 0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("read %s: %w", d.path, err)
		}
	}
	d.listed = true
	n, err := readNames(d.sys)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	return n, nil
}

func isDir(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// mountsBelow names the mount points in table at or below dir.
func mountsBelow(table []string, dir string) []string {
	var out []string
	for _, m := range table {
		if m == dir || (len(m) > len(dir) && m[len(dir)] == '/' && m[:len(dir)] == dir) {
			out = append(out, m)
		}
	}
	return out
}
