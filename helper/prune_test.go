package helper

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/reclaim"
)

// The helper answering a prune runs from one of the versions under bin/:
// that one stays even when the CLI names no current one, and the others
// nothing runs go.
func TestPruneKeepsTheServingHelper(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "kandev")
	serving := filepath.Join(root, "bin", strings.Repeat("9", 64))
	unused := filepath.Join(root, "bin", strings.Repeat("8", 64))
	for _, d := range []string{serving, unused} {
		copyFile(t, self, filepath.Join(d, "kandev-exec"))
		old := time.Now().Add(-2 * time.Hour)
		for _, p := range []string{filepath.Join(d, "kandev-exec"), d} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(filepath.Join(serving, "kandev-exec"), "serve")
	cmd.Stdin = bytes.NewReader(request(t, protocol.OpHelperPrune, reclaim.HelpersRequest{Root: root, MinAgeSeconds: 60}))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve: %v (%s)", err, out)
	}
	var rep reclaim.HelpersReport
	if err := protocol.ReadAnswer(bytes.NewReader(out), &rep, nil); err != nil {
		t.Fatalf("answer: %v (%s)", err, out)
	}
	if len(rep.Versions) != 2 {
		t.Fatalf("versions: %+v", rep.Versions)
	}
	got := map[string]reclaim.HelperVersion{}
	for _, v := range rep.Versions {
		got[filepath.Join(root, "bin", v.SHA256)] = v
	}
	if v := got[serving]; v.Action != "skipped" || v.Reason != reclaim.ServingHelper {
		t.Errorf("the serving helper: %+v", v)
	}
	if v := got[unused]; v.Action != "removed" || v.Bytes <= 0 {
		t.Errorf("the unused helper: %+v", v)
	}
	if _, err := os.Lstat(unused); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", unused, err)
	}
	if _, err := os.Stat(filepath.Join(serving, "kandev-exec")); err != nil {
		t.Errorf("the serving helper went: %v", err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(dst), 0o700)
	}
	if err == nil {
		err = os.WriteFile(dst, b, 0o700)
	}
	if err != nil {
		t.Fatal(err)
	}
}
