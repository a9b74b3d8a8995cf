package state

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Named regression tests for the symlink escape: a link planted inside
// the store must be refused, and its target left untouched.

func wantUnsafe(t *testing.T, op string, err error) {
	t.Helper()
	var ue *UnsafePathError
	if !errors.As(err, &ue) {
		t.Fatalf("%s: got %v, want *UnsafePathError", op, err)
	}
}

// precious is a file outside the store that a planted link points at.
func precious(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "precious")
	content := []byte(`{"kind":"widget","name":"b","revision":1,"schema_version":1,"data":{}}`)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(content) {
			t.Fatalf("symlink target changed: %q, %v", got, err)
		}
	}
}

func TestSymlinkedRecordRefused(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if _, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	target, check := precious(t)
	// A link where a new record would go, and one replacing a record.
	if err := os.Symlink(target, s.recordPath(testKind, "b")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, testKind, "b")
	wantUnsafe(t, "Get", err)
	_, err = s.Create(ctx, testKind, "b", json.RawMessage(`{"x":1}`), Event{Type: "widget.added"})
	wantUnsafe(t, "Create", err)
	_, err = s.Update(ctx, testKind, "b", 1, json.RawMessage(`{"x":1}`), Event{Type: "widget.changed"})
	wantUnsafe(t, "Update", err)
	wantUnsafe(t, "Delete", s.Delete(ctx, testKind, "b", 1, Event{Type: "widget.removed"}))
	_, err = s.AcquireClaim(ctx, testKind, "b", time.Minute)
	wantUnsafe(t, "AcquireClaim", err)
	_, err = s.List(ctx, testKind)
	wantUnsafe(t, "List", err)
	check()
	if _, err := os.Lstat(target); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(s.recordPath(testKind, "b")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the planted link was replaced instead of refused")
	}
}

func TestSymlinkedDirectoriesRefused(t *testing.T) {
	ctx := context.Background()
	for _, which := range []string{recordsDir, filepath.Join(recordsDir, string(testKind))} {
		t.Run(filepath.Base(which), func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{})
			outside := t.TempDir()
			link := s.path(which)
			os.Remove(link)
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			_, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"})
			wantUnsafe(t, "Create", err)
			_, err = s.Get(ctx, testKind, "a")
			wantUnsafe(t, "Get", err)
			_, err = s.List(ctx, testKind)
			wantUnsafe(t, "List", err)
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("wrote through the link: %v", entries)
			}
		})
	}
}

func TestSymlinkedStoreFilesRefused(t *testing.T) {
	ctx := context.Background()
	t.Run("store dir", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "state")
		if err := os.Symlink(t.TempDir(), link); err != nil {
			t.Fatal(err)
		}
		_, err := Open(link, Options{})
		wantUnsafe(t, "Open", err)
	})
	for _, name := range []string{metaFile, journalFile, lockFile} {
		t.Run(name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{})
			target, check := precious(t)
			os.Remove(s.path(name))
			if err := os.Symlink(target, s.path(name)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"})
			wantUnsafe(t, "Create", err)
			check()
			if _, err := s.readRecord(testKind, "a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("record written although the transaction was refused: %v", err)
			}
		})
	}
}

func TestFIFORecordRefused(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if _, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(s.recordPath(testKind, "b"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, testKind, "b") // must not block on the FIFO
	wantUnsafe(t, "Get", err)
	_, err = s.Create(ctx, testKind, "b", json.RawMessage(`{}`), Event{Type: "widget.added"})
	wantUnsafe(t, "Create", err)
}

func TestPermissions(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nested", "state")
	s := openTest(t, dir, Options{})
	if _, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, s.path(recordsDir), s.kindDir(testKind)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != dirMode {
			t.Errorf("%s: mode %v, %v; want %v", d, fi.Mode().Perm(), err, os.FileMode(dirMode))
		}
	}
	for _, f := range []string{s.path(metaFile), s.path(journalFile), s.path(lockFile), s.recordPath(testKind, "a")} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != fileMode {
			t.Errorf("%s: mode %v, %v; want %v", f, fi.Mode().Perm(), err, os.FileMode(fileMode))
		}
	}
}
