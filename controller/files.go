package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	b, err := os.ReadFile(filepath.Join(dir, portFile))
	if errors.Is(err, fs.ErrNotExist) {
		return pid, 0, nil
	}
	if err != nil {
		return pid, 0, err
	}
	if port, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || port <= 0 || port > 65535 {
		return pid, 0, fmt.Errorf("malformed %s", portFile)
	}
	return pid, port, nil
}
