package controller

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A real ENOSPC (/dev/full): the bytes are counted with the kernel's
// reason, the caller never sees an error, and once writing works again
// the notice comes first.
func TestLogWriterCountsRealENOSPC(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test needs /dev/full (Linux): %v", err)
	}
	defer full.Close()
	l := &logWriter{w: full}
	for _, p := range []string{"hello ", "world\n"} {
		if n, err := l.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it and no error", p, n, err)
		}
	}
	lost, reason := l.lostBytes()
	if lost != 12 || !strings.Contains(reason, "no space left on device") {
		t.Fatalf("lost %d (%q), want 12 bytes and ENOSPC", lost, reason)
	}
	var log bytes.Buffer
	l.w = &log
	l.Write([]byte("next\n"))
	want := regexp.MustCompile(`^\[controller\] \S+ 12 bytes lost: write /dev/full: no space left on device\nnext\n$`)
	if !want.MatchString(log.String()) {
		t.Fatalf("log after recovery:\n%q", log.String())
	}
	if lost, _ := l.lostBytes(); lost != 12 {
		t.Fatalf("total lost %d after recovery, want it kept at 12", lost)
	}
}

// shortWriter writes the first n bytes it is given, then fails until
// healed.
type shortWriter struct {
	buf    bytes.Buffer
	n      int
	healed bool
}

func (w *shortWriter) Write(p []byte) (int, error) {
	if w.healed {
		return w.buf.Write(p)
	}
	k := min(len(p), w.n)
	w.n -= k
	w.buf.Write(p[:k])
	if k < len(p) {
		return k, syscall.ENOSPC
	}
	return k, nil
}

// A write cut short mid-line counts only what is missing, the notice
// starts on a line of its own, and a notice that fails too keeps counting.
func TestLogWriterShortWrite(t *testing.T) {
	t.Parallel()
	w := &shortWriter{n: 4}
	l := &logWriter{w: w}
	l.Write([]byte("abcdefgh\n")) // 4 written, 5 lost
	l.Write([]byte("ij\n"))       // the notice fails: 3 more lost
	if lost, _ := l.lostBytes(); lost != 8 {
		t.Fatalf("lost %d, want 8", lost)
	}
	w.healed = true
	l.retryNotice()
	if !regexp.MustCompile(`^abcd\n\[controller\] \S+ 8 bytes lost: no space left on device\n$`).MatchString(w.buf.String()) {
		t.Fatalf("log %q", w.buf.String())
	}
	l.retryNotice() // nothing due: nothing written
	if strings.Count(w.buf.String(), "bytes lost") != 1 {
		t.Fatalf("notice repeated: %q", w.buf.String())
	}
}

// diskSwitch fails every write with ENOSPC while full is set.
type diskSwitch struct {
	w    io.Writer
	path string
	full atomic.Bool
}

func (d *diskSwitch) Write(p []byte) (int, error) {
	if d.full.Load() {
		return 0, &os.PathError{Op: "write", Path: d.path, Err: syscall.ENOSPC}
	}
	return d.w.Write(p)
}

// inProcess runs a controller in this process, with setup applied before
// it starts; stop signals it and waits for serve to return.
func inProcess(t *testing.T, req StartRequest, setup func(*server)) (s *server, stop func() error) {
	t.Helper()
	s, err := newServer(req.SessionDir, req)
	if err != nil {
		t.Fatal(err)
	}
	setup(s)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	sigc := make(chan os.Signal, 1)
	served := make(chan error, 1)
	go func() { served <- s.serve(sigc) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			sigc <- syscall.SIGTERM
			serveErr = <-served
		})
		return serveErr
	}
	t.Cleanup(func() { stop() })
	return s, stop
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Regression: agent output the log could not take (disk full)
// is counted, shown in status (API and status.json), and reported in the
// log by a "bytes lost" line once writing works again.
func TestAgentLogLossCountedAndReported(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `echo before
while [ ! -e go1 ]; do sleep 0.05; done
head -c 1000 /dev/zero | tr '\0' x; echo
while [ ! -e go2 ]; do sleep 0.05; done
echo after`)
	var disk *diskSwitch
	s, _ := inProcess(t, req, func(s *server) {
		s.logSink = func(f *os.File) io.Writer {
			disk = &diskSwitch{w: f, path: f.Name()}
			return disk
		}
	})
	logPath := filepath.Join(req.SessionDir, logFile)
	readLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	waitFor(t, 5*time.Second, "before", func() bool { return strings.Contains(readLog(), "before\n") })
	disk.full.Store(true)
	touch(t, filepath.Join(req.TaskDir, "go1"))
	waitFor(t, 5*time.Second, "1001 bytes lost", func() bool { return s.status().LogLostBytes == 1001 })
	disk.full.Store(false)
	touch(t, filepath.Join(req.TaskDir, "go2"))
	waitFor(t, 5*time.Second, "agent exited", func() bool { return s.status().State == StateExited })

	log := readLog()
	if strings.Contains(log, "xxx") {
		t.Fatalf("bytes counted lost are in the log:\n%s", log)
	}
	notice := regexp.MustCompile(`\n\[controller\] \S+ 1001 bytes lost: write \S+/controller.log: no space left on device\nafter\n`)
	if !notice.MatchString(log) {
		t.Fatalf("log lacks the notice before the next output:\n%s", log)
	}
	st, err := NewClient(nil, s.status().Port, req.Token).Status(ctxFor(t, 5*time.Second))
	if err != nil || st.LogLostBytes != 1001 || !strings.Contains(st.LogLostReason, "no space left on device") {
		t.Fatalf("/v1/status %+v, %v; want 1001 bytes lost and why", st, err)
	}
	if fst, err := ReadStatusFile(req.SessionDir); err != nil || fst.LogLostBytes != 1001 {
		t.Fatalf("status.json %+v, %v; want log_lost_bytes 1001", fst, err)
	}
}

// failingStatus fails writes of a final status while failing is set, and
// counts them.
type failingStatus struct {
	mu       sync.Mutex
	write    func(Status) error
	failing  bool
	failures int
}

func (f *failingStatus) Write(st Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing && (st.State == StateExited || st.State == StateStopped) {
		f.failures++
		return &os.PathError{Op: "write", Path: statusFile, Err: syscall.ENOSPC}
	}
	return f.write(st)
}

func (f *failingStatus) set(failing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = failing
}

func (f *failingStatus) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

func statusFileSays(t *testing.T, dir string) Status {
	t.Helper()
	st, err := ReadStatusFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Regression: an exited agent whose final status write failed
// is recorded once the disk has room again, while the controller runs
// (status.json is what recovery reads once it is gone: "running" there
// means lost).
func TestFinalStatusWriteRetried(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `while [ ! -e go ]; do sleep 0.05; done; exit 7`)
	fs := &failingStatus{failing: true}
	inProcess(t, req, func(s *server) { fs.write, s.writeStatus = s.writeStatus, fs.Write })
	touch(t, filepath.Join(req.TaskDir, "go"))
	waitFor(t, 10*time.Second, "two failed final writes", func() bool { return fs.count() >= 2 })
	if st := statusFileSays(t, req.SessionDir); st.State != StateRunning {
		t.Fatalf("status.json says %q while its writes fail", st.State)
	}
	fs.set(false)
	waitFor(t, 10*time.Second, "status.json to say exited", func() bool {
		st, err := ReadStatusFile(req.SessionDir)
		return err == nil && st.State == StateExited
	})
	if st := statusFileSays(t, req.SessionDir); st.ExitCode == nil || *st.ExitCode != 7 || st.EndedAt == nil {
		t.Fatalf("status.json %+v, want exited with code 7", st)
	}
	// The retrier logs its success once it has let go of the status.
	waitFor(t, 5*time.Second, "the log to say status.json was written", func() bool {
		return strings.Contains(readLogFile(t, req.SessionDir), "Z status.json written\n")
	})
	if log := readLogFile(t, req.SessionDir); !strings.Contains(log, "writing status.json failed: write status.json: no space left on device; retrying") {
		t.Fatalf("log does not say the write failed:\n%s", log)
	}
}

// Regression: a controller told to exit while its final status
// write still fails keeps trying (bounded) before it goes.
func TestFinalStatusWrittenAtExit(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `exit 3`)
	fs := &failingStatus{failing: true}
	_, stop := inProcess(t, req, func(s *server) {
		fs.write, s.writeStatus = s.writeStatus, fs.Write
		s.retrying = true // no background retrier: only the exit path writes
	})
	waitFor(t, 5*time.Second, "a failed final write", func() bool { return fs.count() >= 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	n := fs.count()
	waitFor(t, 10*time.Second, "a retry while exiting", func() bool { return fs.count() > n })
	fs.set(false)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if st := statusFileSays(t, req.SessionDir); st.State != StateExited || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("status.json %+v after exit, want exited with code 3", st)
	}
}

func readLogFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, logFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// Regression: the agent's first output never comes before the line that
// says it started, however slow the status write between them is (a
// loaded host; it made `session logs --tail` show the start line last).
func TestAgentStartedLineComesFirst(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `echo first; touch printed; while [ ! -e go ]; do sleep 0.05; done`)
	printed := filepath.Join(req.TaskDir, "printed")
	_, stop := inProcess(t, req, func(s *server) {
		write := s.writeStatus
		s.writeStatus = func(st Status) error {
			if st.State == StateRunning && st.AgentPID != 0 {
				// The agent has printed by the time its status is written.
				waitFor(t, 10*time.Second, "the agent's first line", func() bool { _, err := os.Stat(printed); return err == nil })
			}
			return write(st)
		}
	})
	defer stop()
	waitFor(t, 10*time.Second, "the agent's output in the log", func() bool {
		return strings.Contains(readLogFile(t, req.SessionDir), "first\n")
	})
	touch(t, filepath.Join(req.TaskDir, "go"))
	log := readLogFile(t, req.SessionDir)
	if i, j := strings.Index(log, "agent started, pid"), strings.Index(log, "first\n"); i < 0 || j < i {
		t.Fatalf("the agent's output comes before its start line:\n%s", log)
	}
}
