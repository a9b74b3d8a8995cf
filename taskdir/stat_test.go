package taskdir

import (
	"os"
	"path/filepath"
	"testing"
)

// Stat describes the path itself, never what a link points to.
func TestStatNeverFollows(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]StatResult{
		dir:                         {Exists: true, IsDir: true},
		link:                        {Exists: true, IsSymlink: true},
		filepath.Join(dir, "nope"):  {},
		filepath.Join(link, "nope"): {},
	} {
		got, err := Stat(StatRequest{Path: path})
		if err != nil || *got != want {
			t.Fatalf("stat %s = %+v, %v; want %+v", path, got, err, want)
		}
	}
	_, err := Stat(StatRequest{Path: "relative"})
	wantCode(t, err, CodeBadRequest)
}
