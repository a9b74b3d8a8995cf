package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// ReadPIDPort reads what a controller wrote first in its session dir: its
// pid, then its port. A file not there reads as 0: no pid means no
// controller ever ran there, no port that it never bound.
func ReadPIDPort(sessionDir string) (pid, port int, err error) {
	dir := filepath.Clean(sessionDir)
	if pid, err = readPID(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	port, err = readNumber(dir, portFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pid, 0, nil
	case err != nil:
		return pid, 0, err
	case port > 65535:
		return pid, 0, fmt.Errorf("malformed %s", portFile)
	}
	return pid, port, nil
}

// maxNumberFile bounds a pid or port file: a number and a newline.
const maxNumberFile = 64

// readNumber reads the positive number in dir/name, never through a link
// and never more than maxNumberFile bytes of it.
func readNumber(dir, name string) (int, error) {
	b, err := fsx.ReadFileMax(filepath.Join(dir, name), maxNumberFile)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("malformed %s", name)
	}
	return n, nil
}
