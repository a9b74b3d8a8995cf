package state

import (
	"os"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// Nothing in the store follows a symlink: a link planted in the state
// directory could otherwise redirect a write onto any file the user owns.
// The primitives are fsx's; these keep the store's call sites short.

const (
	dirMode  = 0o700
	fileMode = 0o600
)

func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return fsx.OpenFile(path, flag, perm)
}

func readFileNoFollow(path string) ([]byte, error) { return fsx.ReadFile(path) }

func checkDir(path string) error { return fsx.CheckDir(path) }

func writeFileAtomic(path string, data []byte, durable bool) error {
	return fsx.WriteFile(path, data, durable)
}

func removeDurable(path string) error { return fsx.Remove(path) }

func syncDir(path string) error { return fsx.SyncDir(path) }

// ensureDir creates one directory level (0700) unless a real one is there,
// and makes a new one survive a crash.
func ensureDir(path string) error {
	created, err := fsx.EnsureDir(path, dirMode)
	if err != nil || !created {
		return err
	}
	return syncDir(filepath.Dir(path))
}
