package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// timeFormatting is a time laid out by hand: a layout constant or a
// reference-date layout string passed to Format.
var timeFormatting = regexp.MustCompile(`\.Format\((time\.[A-Z]|"[^"]*(2006|15:04|Jan))|time\.(RFC3339|RFC1123|Kitchen|Stamp|DateTime|DateOnly)`)

// Every command prints times through cmdutil's one helper (ages in
// tables, RFC 3339 to the second elsewhere): no other file of cmd/ lays
// a time out itself.
func TestTimesGoThroughOneHelper(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			path == filepath.Join("cmdutil", "time.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if timeFormatting.MatchString(line) {
				t.Errorf("%s:%d formats a time itself; use cmdutil.Ago or cmdutil.Timestamp: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
