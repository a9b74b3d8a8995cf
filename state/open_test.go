package state

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every way Open can fail is an *OpenError naming the path and what to do,
// and leaves the directory as it found it, so the next Open refuses too.
func TestOpenFailuresSayWhatToDo(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the store path
		want  []string                              // in the message; {} is the store path
	}{
		{"corrupt meta.json", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, metaFile), "{bad")
			return dir
		}, []string{"state store {}: corrupt meta.json: invalid character", "restore {}/meta.json from a backup", "move {} away to start an empty store"}},
		{"meta.json missing beside a journal", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, journalFile), `{"epoch":5,"seq":1}`+"\n")
			return dir
		}, []string{"state store {} has journal.jsonl but no meta.json", "restore {}/meta.json from a backup", "move {}/journal.jsonl away"}},
		{"newer schema_version", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, metaFile), `{"schema_version":99,"epoch":1}`)
			return dir
		}, []string{"state store {} has schema_version 99", "upgrade kandev-exec"}},
		{"a regular file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "state")
			write(t, p, "not a directory")
			return p
		}, []string{"{}: it is not a directory", "move it away"}},
		{"a symbolic link", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "state")
			if err := os.Symlink(t.TempDir(), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"{}: it is a symbolic link", "use the directory itself (", "replace the link with a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			store := c.setup(t, dir)
			before := snapshot(t, dir)
			for try := 1; try <= 2; try++ {
				s, err := Open(store, Options{})
				var oe *OpenError
				if !errors.As(err, &oe) || s != nil {
					t.Fatalf("open %d: got %v, %v; want *OpenError and no store", try, s, err)
				}
				if oe.Dir != store {
					t.Errorf("open %d: Dir %q, want %s", try, oe.Dir, store)
				}
				for _, w := range c.want {
					if w = strings.ReplaceAll(w, "{}", store); !strings.Contains(err.Error(), w) {
						t.Errorf("open %d: %q lacks %q", try, err, w)
					}
				}
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("a refused open changed the directory:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// A store whose parent the user may not write opens (it reads as empty);
// its first write is refused with the path and the command that creates
// it. Root writes anywhere, so the helper runs without the capabilities
// that bypass file modes.
func TestOpenUnwritableParent(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(parent, 0o700) })
	store := filepath.Join(parent, "a", "state")
	cmd := withoutDACOverride(t, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=create", helperDirEnv+"="+store, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("a write under a read-only parent: %v\n%s", err, out)
	}
	for _, w := range []string{"cannot create state store " + store, "permission denied", "mkdir -p -m 700 " + store} {
		if !strings.Contains(string(out), w) {
			t.Errorf("%q lacks %q", out, w)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("created %v", entries)
	}
}

// Regression: a store directory that does not
// exist is not created by opening or reading it; it reads as empty, and
// the first write creates it.
func TestOpenAbsentStoreReadsEmpty(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "state")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, testKind, "w1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get: %v, want not found", err)
	}
	if rs, err := s.List(ctx, testKind); err != nil || len(rs) != 0 {
		t.Errorf("List: %v, %v", rs, err)
	}
	if es, err := s.Journal(ctx, 0); err != nil || len(es) != 0 {
		t.Errorf("Journal: %v, %v", es, err)
	}
	if ks, err := s.Kinds(ctx); err != nil || len(ks) != 0 {
		t.Errorf("Kinds: %v, %v", ks, err)
	}
	if cs, err := s.LiveClaims(ctx); err != nil || len(cs) != 0 {
		t.Errorf("LiveClaims: %v, %v", cs, err)
	}
	epoch, err := s.Epoch(ctx)
	if err != nil {
		t.Errorf("Epoch: %v", err)
	}
	if _, err := os.Lstat(filepath.Dir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading created %s: %v", filepath.Dir(dir), err)
	}
	if _, err := s.Create(ctx, testKind, "w1", []byte(`{}`), Event{Type: "widget.created"}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Journal(ctx, 0)
	if err != nil || len(es) != 1 {
		t.Fatalf("after the first write: journal %v, %v", es, err)
	}
	if now, _ := s.Epoch(ctx); now == epoch || now == 0 {
		t.Errorf("epoch %d before the first write, %d after: a follower would miss it", epoch, now)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created %v, %v; want mode 700", fi, err)
	}
}

// withoutDACOverride runs name without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH when the test runs as root (setpriv, util-linux).
func withoutDACOverride(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return exec.Command(name, args...)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatalf("setpriv is required to drop root's file-mode override: apt-get install -y util-linux")
	}
	caps := "-dac_override,-dac_read_search"
	return exec.Command("setpriv", append([]string{"--inh-caps=" + caps, "--bounding-set=" + caps, name}, args...)...)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every path under dir with its content, but for the lock
// file: taking the lock writes no state.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Name() == lockFile {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
