package fsx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHelperProcess holds a lock in a child process for the tests below;
// it does nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("FSX_HOLD_LOCK")
	if path == "" {
		t.Skip("helper for the cross-process lock test")
	}
	l, err := Acquire(context.Background(), path, LockOptions{Wait: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin) // hold until the parent closes stdin
	l.Release()
	os.Exit(0)
}

// holdInChild takes the lock at path in another process; closing the
// returned writer makes it let go and exit.
func holdInChild(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "FSX_HOLD_LOCK="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	return cmd, stdin
}

// Another process holding the lock makes a waiter give up after its bound
// with an error naming the holder; once the holder lets go (its note gone
// first), the lock is free.
func TestLockNamesHolderAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	cmd, release := holdInChild(t, path)
	const bound = 200 * time.Millisecond
	_, err := Acquire(context.Background(), path, LockOptions{What: "widget store", Path: "/w", Wait: bound})
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want *LockedError", err)
	}
	pid := cmd.Process.Pid
	if le.Holder == nil || le.Holder.PID != pid || le.Holder.Command != CommandName(os.Args) || le.Waited < bound {
		t.Fatalf("LockedError %+v (holder %+v), want pid %d after %s", le, le.Holder, pid, bound)
	}
	msg := le.Error()
	for _, want := range []string{"widget store /w is locked by pid " + strconv.Itoa(pid), "(" + le.Holder.Command + ")", "waited "} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}

	release.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if h := ReadHolder(path); h != nil {
		t.Fatalf("the holder note outlived the lock: %+v", h)
	}
	l, err := Acquire(context.Background(), path, LockOptions{Wait: bound})
	if err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
	l.Release()
}

// Goroutines each taking their own lock exclude each other: a
// read-modify-write under the lock loses no increment.
func TestLockExcludesGoroutines(t *testing.T) {
	dir := t.TempDir()
	path, counter := filepath.Join(dir, "lock"), filepath.Join(dir, "counter")
	if err := WriteFile(counter, []byte("0"), false); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := Acquire(context.Background(), path, LockOptions{Wait: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				b, err := ReadFile(counter)
				n, _ := strconv.Atoi(string(b))
				if err == nil {
					err = WriteFile(counter, []byte(strconv.Itoa(n+1)), false)
				}
				l.Release()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if b, _ := ReadFile(counter); string(b) != strconv.Itoa(workers*rounds) {
		t.Fatalf("counter %s, want %d", b, workers*rounds)
	}
}

// A cancelled wait returns the context's error, not a LockedError; a
// zero wait does not wait; a holder's note names the holder it was given.
func TestLockWaitCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	held, err := Acquire(context.Background(), path, LockOptions{Wait: time.Second, Holder: Holder{PID: 42, Command: "kandev-exec test", Since: since}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if h := ReadHolder(path); h == nil || *h != (Holder{PID: 42, Command: "kandev-exec test", Since: since}) {
		t.Fatalf("holder note %+v", h)
	}
	// No wait at all: refused at once, naming the holder.
	_, err = Acquire(context.Background(), path, LockOptions{})
	var le0 *LockedError
	if !errors.As(err, &le0) || le0.Holder == nil || le0.Holder.PID != 42 {
		t.Fatalf("without waiting: %v, want *LockedError naming pid 42", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Acquire(ctx, path, LockOptions{What: "widget store", Wait: time.Hour})
	var le *LockedError
	if !errors.Is(err, context.Canceled) || errors.As(err, &le) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestLockRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.Symlink(target, filepath.Join(dir, "lock")); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(context.Background(), filepath.Join(dir, "lock"), LockOptions{Wait: time.Second})
	wantUnsafe(t, "symlinked lock", err)
	if _, err := os.Lstat(target); err == nil {
		t.Fatal("the symlink's target was created")
	}
}

// A holder is named by program and subcommands only, so a value passed on
// the command line never reaches lock notes, records or errors.
func TestCommandNameDropsArguments(t *testing.T) {
	cases := map[string][]string{
		"kandev-exec task launch": {"/usr/bin/kandev-exec", "task", "launch", "--env", "TOKEN=s3cret", "--", "x"},
		"kandev-exec host add":    {"kandev-exec", "host", "add", "prod", "--alias", "p"},
		"kandev-exec secret set":  {"./kandev-exec", "secret", "set", "s3cret=1"},
		"state.test":              {"/tmp/state.test", "-test.run=X"},
		"":                        {},
	}
	for want, args := range cases {
		if got := CommandName(args); got != want {
			t.Errorf("CommandName(%q) = %q, want %q", args, got, want)
		}
	}
	long := CommandName([]string{strings.Repeat("é", 200)})
	if len(long) > maxCommandLen+len("…") || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") {
		t.Fatalf("long name %q", long)
	}
}

// A lock whose directory is renamed while it is held still removes its
// holder note on Release, where Moved says it is now.
func TestLockMovedRemovesTheNoteWhereItIs(t *testing.T) {
	dir := t.TempDir()
	was, now := filepath.Join(dir, "was"), filepath.Join(dir, "now")
	if err := os.Mkdir(was, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(context.Background(), filepath.Join(was, "lock"), LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(was, now); err != nil {
		t.Fatal(err)
	}
	if ReadHolder(filepath.Join(now, "lock")) == nil {
		t.Fatal("no holder note after the rename")
	}
	l.Moved(filepath.Join(now, "lock"))
	l.Release()
	if _, err := os.Lstat(filepath.Join(now, "lock"+NoteSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the holder note after Release: %v", err)
	}
}
