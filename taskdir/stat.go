package taskdir

import (
	"errors"
	"io/fs"
	"os"
)

// StatRequest asks about one path on the host without following it.
type StatRequest struct {
	Path string `json:"path"` // absolute or ~-prefixed
}

// StatResult describes the path itself (Lstat), never a symlink's target.
type StatResult struct {
	Exists    bool `json:"exists"`
	IsDir     bool `json:"is_dir"`
	IsSymlink bool `json:"is_symlink"`
}

// Stat reports what is at req.Path.
func Stat(req StatRequest) (*StatResult, error) {
	path, err := expandPath(req.Path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &StatResult{}, nil
	}
	if err != nil {
		return nil, errorf(CodeIO, "inspect %s: %v", path, err)
	}
	return &StatResult{Exists: true, IsDir: fi.IsDir(), IsSymlink: fi.Mode()&fs.ModeSymlink != 0}, nil
}
