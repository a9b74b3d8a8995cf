package state

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The multi-process tests re-run this test binary as a helper selected by
// helperEnv; TestHelperProcess is its entry point and does nothing in a
// normal run.
const (
	helperEnv    = "KANDEV_STATE_HELPER"
	helperDirEnv = "KANDEV_STATE_HELPER_DIR"
	helperArgEnv = "KANDEV_STATE_HELPER_ARG"
)

const testKind Kind = "widget"

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper for the multi-process tests")
	}
	err := runHelper(mode, os.Getenv(helperDirEnv), os.Getenv(helperArgEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runHelper(mode, dir, arg string) error {
	ctx := context.Background()
	if mode == "holdlock" {
		// Lock without Open, so it also works before the store exists.
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return err
		}
		s := &FileStore{dir: dir, lockTimeout: time.Minute, now: time.Now}
		l, err := s.lock(ctx)
		if err != nil {
			return err
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin) // hold until the parent closes stdin
		l.unlock()
		return nil
	}
	s, err := Open(dir, Options{LockTimeout: time.Minute})
	if err != nil {
		return err
	}
	switch mode {
	case "open":
		return nil
	case "create":
		_, err := s.Create(ctx, testKind, "w1", json.RawMessage(`{}`), Event{Type: "widget.created"})
		return err
	case "increment":
		n, _ := strconv.Atoi(arg)
		for i := 0; i < n; {
			ok, err := increment(ctx, s, "counter")
			if err != nil {
				return err
			}
			if ok {
				i++
			}
		}
		return nil
	case "claim":
		c, err := s.AcquireClaim(ctx, testKind, "job", time.Hour)
		if err != nil {
			return err
		}
		fmt.Println(c.ID)
		if arg == "hold" {
			io.Copy(io.Discard, os.Stdin)
		}
		return nil
	case "writeloop":
		return writeLoop(ctx, s)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// increment adds one to a counter record; false on a lost CAS race.
func increment(ctx context.Context, s *FileStore, name string) (bool, error) {
	r, err := s.Get(ctx, testKind, name)
	if err != nil {
		return false, err
	}
	var v struct{ N int }
	if err := json.Unmarshal(r.Data, &v); err != nil {
		return false, err
	}
	_, err = s.Update(ctx, testKind, name, r.Revision, fmt.Appendf(nil, `{"n":%d}`, v.N+1), Event{Type: "widget.changed"})
	var ce *ConflictError
	if errors.As(err, &ce) {
		return false, nil
	}
	return err == nil, err
}

// selfCheckingData embeds the revision it is written at, so a reader can
// tell a half-applied write; the padding makes each write take a while.
func selfCheckingData(rev uint64, pad int) json.RawMessage {
	return fmt.Appendf(nil, `{"rev":%d,"pad":%q}`, rev, strings.Repeat("x", pad))
}

// writeLoop writes until killed: updates, creates, and claim checkpoints.
func writeLoop(ctx context.Context, s *FileStore) error {
	ev := Event{Type: "widget.changed"}
	for i := 0; ; i++ {
		name := fmt.Sprintf("r%d", i%4)
		r, err := s.Get(ctx, testKind, name)
		if errors.Is(err, ErrNotFound) {
			_, err = s.Create(ctx, testKind, name, selfCheckingData(1, 10), ev)
		} else if err == nil && i%7 == 0 {
			err = checkpointOnce(ctx, s, r)
		} else if err == nil {
			_, err = s.Update(ctx, testKind, name, r.Revision, selfCheckingData(r.Revision+1, 1000+i%5*30000), ev)
		}
		if err != nil {
			return err
		}
		if i == 4 {
			fmt.Println("ready")
		}
	}
}

func checkpointOnce(ctx context.Context, s *FileStore, r Record) error {
	c, err := s.AcquireClaim(ctx, testKind, r.Name, time.Minute)
	if err != nil {
		return err
	}
	if _, _, err := s.Checkpoint(ctx, c, 1, r.Revision, selfCheckingData(r.Revision+1, 5000), Event{Type: "widget.phase"}); err != nil {
		return err
	}
	return s.ReleaseClaim(ctx, c)
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startHelper(t *testing.T, mode, dir, arg string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+dir, helperArgEnv+"="+arg,
		// A race-enabled helper would otherwise sleep 1s before exiting.
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
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
	h := &helper{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			h.cmd.Process.Kill()
			h.cmd.Wait()
		}
	})
	return h
}

// line waits for the helper's next line of output.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		t.Fatalf("helper %d exited before reporting: %v", h.cmd.Process.Pid, h.wait())
	}
	return h.out.Text()
}

func (h *helper) wait() error {
	h.stdin.Close()
	return h.cmd.Wait()
}

func (h *helper) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait() // reap, so the pid is really gone
}
