package controller

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// The pid and port files are read as the controller wrote them, never
// through a link planted in their place, and never more than a number.
func TestReadPIDPort(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		os.Remove(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if pid, port, err := ReadPIDPort(dir); pid != 0 || port != 0 || err != nil {
		t.Fatalf("no files: %d %d %v", pid, port, err)
	}
	write(pidFile, "123\n")
	if pid, port, err := ReadPIDPort(dir); pid != 123 || port != 0 || err != nil {
		t.Fatalf("pid only: %d %d %v", pid, port, err)
	}
	write(portFile, "4567\n")
	if pid, port, err := ReadPIDPort(dir); pid != 123 || port != 4567 || err != nil {
		t.Fatalf("both: %d %d %v", pid, port, err)
	}
	for _, bad := range []string{"70000\n", "0\n", "x\n"} {
		write(portFile, bad)
		if _, _, err := ReadPIDPort(dir); err == nil || !strings.Contains(err.Error(), "malformed "+portFile) {
			t.Errorf("port %q: %v", bad, err)
		}
	}
	write(portFile, strings.Repeat("1", maxNumberFile+1))
	var large *fsx.TooLargeError
	if _, _, err := ReadPIDPort(dir); !errors.As(err, &large) {
		t.Errorf("an oversized port file: %v", err)
	}
	elsewhere := filepath.Join(t.TempDir(), "port")
	if err := os.WriteFile(elsewhere, []byte("4567\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, portFile))
	if err := os.Symlink(elsewhere, filepath.Join(dir, portFile)); err != nil {
		t.Fatal(err)
	}
	var unsafe *fsx.UnsafePathError
	if _, _, err := ReadPIDPort(dir); !errors.As(err, &unsafe) {
		t.Errorf("a port file that is a link: %v", err)
	}
}
