package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func wantUnsafe(t *testing.T, what string, err error) {
	t.Helper()
	var ue *UnsafePathError
	if !errors.As(err, &ue) {
		t.Fatalf("%s: got %v, want *UnsafePathError", what, err)
	}
}

func TestWriteFileReplacesWholeFile(t *testing.T) {
	for _, durable := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.json")
		for _, data := range []string{"first", "second, longer", ""} {
			if err := WriteFile(path, []byte(data), durable); err != nil {
				t.Fatal(err)
			}
			if b, err := ReadFile(path); err != nil || string(b) != data {
				t.Fatalf("durable=%v: read %q, %v; want %q", durable, b, err, data)
			}
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("temp files left behind: %v", entries)
		}
	}
}

// A symlink or a FIFO where a file is to be replaced is refused, and the
// link's target is left alone.
func TestWriteFileRefusesOddTargets(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, "symlink", WriteFile(link, []byte("x"), true))
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Fatalf("target changed to %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, "fifo", WriteFile(fifo, []byte("x"), true))
	wantUnsafe(t, "directory", WriteFile(dir, []byte("x"), true))
}

// A FIFO planted where a file is read must not hang the open, and a
// symlink is never followed.
func TestOpenFileRefusesFIFOAndSymlink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(fifo) // a blocking open would wait for a writer forever
	wantUnsafe(t, "fifo", err)
	if !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("message %q", err)
	}

	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(link)
	wantUnsafe(t, "symlink", err)
	_, err = OpenFile(link, os.O_RDWR|os.O_CREATE, 0o600)
	wantUnsafe(t, "symlink create", err)
	if _, err := ReadFile(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestReadFileMax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFileMax(path, 5); err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadFileMax(path, 4); !errors.As(err, &tl) || tl.Limit != 4 || tl.Path != path {
		t.Fatalf("over the limit: %v, want *TooLargeError", err)
	}
}

// A file the user named is read through a symlink, but a FIFO there is
// still refused without hanging, and the size bound holds.
func TestReadNamedFileMax(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "token")
	if err := os.WriteFile(target, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadNamedFileMax(link, 64); err != nil || string(b) != "s3cret" {
		t.Fatalf("through a symlink: %q, %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadNamedFileMax(link, 3); !errors.As(err, &tl) {
		t.Fatalf("over the limit: %v, want *TooLargeError", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "fifo-link")); err != nil {
		t.Fatal(err)
	}
	_, err := ReadNamedFileMax(filepath.Join(dir, "fifo-link"), 64)
	wantUnsafe(t, "fifo behind a symlink", err)
	_, err = ReadNamedFileMax("/dev/zero", 64)
	wantUnsafe(t, "device", err)
}

func TestEnsureDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if created, err := EnsureDir(dir, 0o700); err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if created, err := EnsureDir(dir, 0o700); err != nil || created {
		t.Fatalf("second: %v %v", created, err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureDir(link, 0o700)
	wantUnsafe(t, "symlinked dir", err)
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, "file as dir", CheckDir(file))
	if err := CheckDir(filepath.Join(root, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("absent: %v", err)
	}
}

func TestRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(path, []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("still there: %v", err)
	}
	if err := Remove(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removing a missing file: %v", err)
	}
}
