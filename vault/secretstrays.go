package vault

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// Strays are the files of a secret that its record does not name and
// that nobody is writing (see secretfiles.go).

// secretFiles lists the entries of the secrets directory that belong to
// name, or to every secret when name is "". No directory, no files.
func (vt *Vault) secretFiles(name string) (string, []valueFile, error) {
	dir, err := vt.secretsDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	var out []valueFile
	for _, ent := range entries {
		if vf, ok := parseValueFile(ent.Name()); ok && (name == "" || vf.secret == name) {
			out = append(out, vf)
		}
	}
	return dir, out, nil
}

// stray reports whether vf is a file no record names and nobody is
// writing. When it is, the file is still flocked on return, and release
// must be called after removing it (or not).
func (vt *Vault) stray(ctx context.Context, dir string, vf valueFile) (bool, func(), error) {
	path := filepath.Join(dir, vf.file)
	f, err := fsx.OpenFile(path, os.O_RDONLY, 0)
	var unsafe *fsx.UnsafePathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil, nil
	case errors.As(err, &unsafe):
		// A link or odd file where a value belongs is never read from,
		// and nobody writes through it.
		return true, func() {}, nil
	case err != nil:
		return false, nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil, nil // being written
		}
		return false, nil, err
	}
	// Read the record only now: a writer switches it before letting go
	// of its file, so a file named by now is seen named.
	rec, err := vt.secretRecord(ctx, vf.secret)
	if err != nil || !vf.temp && rec != nil && rec.Version == vf.vid {
		f.Close()
		return false, nil, err
	}
	return true, func() { f.Close() }, nil
}

// removeStrays removes the stray files of a secret and returns their
// names.
func (vt *Vault) removeStrays(ctx context.Context, name string) ([]string, error) {
	dir, files, err := vt.secretFiles(name)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, vf := range files {
		isStray, release, err := vt.stray(ctx, dir, vf)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !isStray {
			continue
		}
		if err := os.Remove(filepath.Join(dir, vf.file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		} else {
			removed = append(removed, vf.file)
		}
		release()
	}
	if len(removed) > 0 {
		errs = append(errs, fsx.SyncDir(dir))
	}
	return removed, errors.Join(errs...)
}

// StraySecretFiles lists the stray files of every secret (for doctor),
// removing nothing.
func (vt *Vault) StraySecretFiles(ctx context.Context) (dir string, strays []string, err error) {
	dir, files, err := vt.secretFiles("")
	if err != nil {
		return "", nil, err
	}
	for _, vf := range files {
		isStray, release, err := vt.stray(ctx, dir, vf)
		if err != nil {
			return dir, strays, err
		}
		if isStray {
			release()
			strays = append(strays, vf.file)
		}
	}
	return dir, strays, nil
}
