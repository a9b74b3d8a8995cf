//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBenchHelperSize: the release helper for this machine's platform,
// built as a release builds it, on the host (the binary) and on the wire
// (gzip -9, as a release ships it).
func TestBenchHelperSize(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kandev-exec-helper")
	sh(t, fmt.Sprintf("cd ../.. && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o %s ./cmd/kandev-exec-helper", bin))
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := strconv.ParseInt(strings.TrimSpace(sh(t, "gzip -9nc "+bin+" | wc -c")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	mb := func(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/1e6) }
	fmt.Printf("\nhelper (release build): %s on the host, %s gzipped on the wire\n", mb(fi.Size()), mb(gz))
	addRow(t, "helper on the host", mb(fi.Size()), "", "", "", "<= 5 MB", yesNo(fi.Size() <= 5e6))
	addRow(t, "helper on the wire (gzip -9)", mb(gz), "", "", "", "<= 2.2 MB", yesNo(gz <= 2.2e6))
}
