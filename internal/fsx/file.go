// Package fsx holds the file primitives every part of kandev-exec shares,
// on the local machine and inside the helper on a remote host: an atomic
// write, a no-follow open of a regular file, a bounded lock that names its
// holder, and the ownership checks of a path on a shared host (owned.go).
// It imports nothing of this module and builds for Linux and macOS.
//
// Nothing here follows a symlink: a link planted where a file is expected
// could redirect a write onto any file the user owns, or a read onto one
// they never meant to hand over.
package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// UnsafePathError: a symlink or an odd file sits where a regular file or a
// directory is expected; it is refused, never followed.
type UnsafePathError struct {
	Path   string
	Reason string // "is a symbolic link", "is not a regular file (p---------)"
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("refusing unsafe path %s: it %s", e.Path, e.Reason)
}

// TooLargeError: a file is larger than its reader accepts.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Path, e.Limit)
}

// OpenFile opens a regular file without following a final symlink.
// O_NONBLOCK keeps a FIFO planted there from hanging the open before the
// regular-file check refuses it.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return openRegular(path, flag|syscall.O_NOFOLLOW, perm)
}

func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &UnsafePathError{Path: path, Reason: "is a symbolic link"}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &UnsafePathError{Path: path, Reason: "is not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a whole regular file without following a symlink; a
// missing file is fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadFileMax is ReadFile for at most limit bytes: a larger file is a
// *TooLargeError, and no more than limit+1 bytes are ever read into memory.
func ReadFileMax(path string, limit int64) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return readMax(f, path, limit)
}

// ReadNamedFileMax reads at most limit bytes of a file the user named on
// purpose (a --from-file, a profile to apply), where a symlink is theirs
// to use and is followed. Only a regular file is read: a FIFO or a device
// could hang the read or never end.
func ReadNamedFileMax(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return readMax(f, path, limit)
}

func readMax(f *os.File, path string, limit int64) ([]byte, error) {
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return b, err
}

// CheckDir reports whether path is a real directory: fs.ErrNotExist when
// absent, *UnsafePathError for a symlink or anything else.
func CheckDir(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafePathError{Path: path, Reason: "is a symbolic link"}
	case !fi.IsDir():
		return &UnsafePathError{Path: path, Reason: "is not a directory"}
	}
	return nil
}

// EnsureDir creates one directory level with perm unless a real directory
// is already there; created reports whether it made it.
func EnsureDir(path string, perm os.FileMode) (created bool, err error) {
	err = CheckDir(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.Mkdir(path, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, CheckDir(path) // lost a race to another creator
		}
		return false, err
	}
	return true, nil
}

// checkTarget refuses to replace anything but a regular file.
func checkTarget(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafePathError{Path: path, Reason: "is a symbolic link"}
	case !fi.Mode().IsRegular():
		return &UnsafePathError{Path: path, Reason: "is not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	return nil
}

// WriteFile replaces path with data (mode 0600) so that readers see the
// old or the new content, never a mix: a temp file in the same directory,
// write, fsync, rename, fsync the directory. durable=false skips both
// fsyncs, for files whose loss in a crash does not matter (a lock's holder
// note); the rename still keeps readers from seeing half a file. A temp
// file is removed on failure; one left by a killed process starts with
// "."+base+".tmp-".
func WriteFile(path string, data []byte, durable bool) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	// CreateTemp uses O_EXCL and mode 0600.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
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
	if durable {
		return SyncDir(dir)
	}
	return nil
}

// Remove deletes a file and makes the removal survive a crash.
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir flushes a directory's entries (a rename or removal in it) to disk.
func SyncDir(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
