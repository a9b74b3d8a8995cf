package executor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kdlbs/kandev-exec/state"
)

// Secret values live beside the store, one file per secret
// (<state dir>/secrets/<name>, 0600 in a 0700 directory), and nowhere else:
// records, the journal and output carry names and times only.

// MaxSecretSize bounds a value: it ends up in a process environment, and
// a bound keeps a mistaken --from-file /dev/zero from eating memory.
const MaxSecretSize = 1 << 20

const secretsDirName = "secrets"

// secretsDir returns the secrets directory, creating it when create is
// set.
func (e *Executor) secretsDir(create bool) (string, error) {
	return e.privateDir(secretsDirName, create)
}

// privateDir returns a 0700 directory beside the store. A symlink or
// non-directory there is refused, and a directory others can read is
// tightened first, so no value is written where it could leak.
func (e *Executor) privateDir(name string, create bool) (string, error) {
	dir := filepath.Join(e.cfg.Store.Dir(), name)
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", &state.UnsafePathError{Path: dir, Reason: "is a symbolic link"}
	case !fi.IsDir():
		return "", &state.UnsafePathError{Path: dir, Reason: "is not a directory"}
	case fi.Mode().Perm() != 0o700:
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writeSecretFile replaces dir/name atomically (temp file, fsync, rename,
// fsync the directory) with a 0600 file, refusing to replace a symlink.
func writeSecretFile(dir, name string, value []byte) error {
	path := filepath.Join(dir, name)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return &state.UnsafePathError{Path: path, Reason: "is not a regular file"}
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(value)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readValueFile reads a regular file of at most MaxSecretSize bytes.
// noFollow refuses a symlink (secret files); O_NONBLOCK keeps a FIFO from
// hanging the open before the regular-file check refuses it.
func readValueFile(path string, noFollow bool) ([]byte, error) {
	flag := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &state.UnsafePathError{Path: path, Reason: "is a symbolic link"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, &state.UnsafePathError{Path: path, Reason: "is not a regular file"}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretSize+1))
	if err == nil && len(b) > MaxSecretSize {
		err = fmt.Errorf("%s is larger than %d bytes", path, MaxSecretSize)
	}
	return b, err
}
