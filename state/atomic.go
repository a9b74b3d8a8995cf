package state

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Nothing in the store follows a symlink: a link planted in the state
// directory could otherwise redirect a write onto any file the user owns.
// Directories are checked with Lstat, files are opened with O_NOFOLLOW and
// then checked to be regular (O_NONBLOCK so a planted FIFO cannot hang us).

const (
	dirMode  = 0o700
	fileMode = 0o600
)

// openNoFollow opens a regular file without following a final symlink.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
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

// readFileNoFollow reads a whole regular file; a missing file is fs.ErrNotExist.
func readFileNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// checkDir reports whether path is a real directory (fs.ErrNotExist when absent).
func checkDir(path string) error {
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

// ensureDir creates one directory level (0700) unless a real one is there.
func ensureDir(path string) error {
	err := checkDir(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Mkdir(path, dirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return checkDir(path)
		}
		return err
	}
	return syncDir(filepath.Dir(path))
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
		return &UnsafePathError{Path: path, Reason: "is not a regular file"}
	}
	return nil
}

// writeFileAtomic replaces path so that readers see the old or the new
// content, never a mix: temp file in the same directory, write, fsync,
// rename, fsync the directory. durable=false skips the fsyncs for files
// whose loss in a crash does not matter (the lock holder note).
func writeFileAtomic(path string, data []byte, durable bool) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	// CreateTemp uses O_EXCL and mode 0600; the leading dot keeps temp
	// files out of List.
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
		return syncDir(dir)
	}
	return nil
}

// removeDurable deletes a file and makes the removal survive a crash.
func removeDurable(path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
