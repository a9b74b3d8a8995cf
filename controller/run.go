package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/loophttp"
	"github.com/kdlbs/kandev-exec/internal/redact"
)

const (
	maxRequest = 1 << 20
	dirPoll    = 500 * time.Millisecond // how often the session dir is checked
)

// server is one running controller.
type server struct {
	req         StartRequest
	dir         string
	grace       time.Duration
	linger      time.Duration
	maxRuntime  time.Duration // 0: unbounded
	idle        time.Duration // idle_timeout; 0: unbounded
	lastOutput  atomic.Int64  // when the agent last wrote, unix nanoseconds
	pid         int
	startTime   uint64
	ln          net.Listener
	log         *os.File
	logMu       sync.Mutex
	agentPGID   int
	groupGone   atomic.Bool                             // observed empty: never signal that id again
	kill        func(pid int, sig syscall.Signal) error // syscall.Kill; tests swap it
	alive       func(pgid int) bool                     // groupAlive; tests swap it
	mask        *redact.Writer                          // agent output into logw; under logMu
	logw        *logWriter                              // every log byte goes through it; under logMu
	logSink     func(*os.File) io.Writer                // what logw writes to: the log; tests put a failing writer in front
	logGen      string                                  // the log's generation; under logMu
	rotations   map[string]rotation                     // how each earlier generation was replaced; under logMu
	rotateAt    int64                                   // LogRotateAt; tests lower it
	logKeep     int64                                   // LogKeep; tests lower it
	writeStatus func(Status) error                      // writes status.json; tests swap it
	outDone     chan struct{}                           // closed once the agent's output has ended
	done        chan struct{}                           // closed when serve returns
	exited      chan struct{}                           // closed once the agent's end is recorded
	stopOnce    sync.Once
	signed      nonceLedger // nonces of the signed requests taken
	stopDone    chan struct{}
	drainMu     sync.Mutex
	mu          sync.Mutex // guards st, stopping, killAt, killGrace, killed, the status file and the two below
	st          Status
	stopping    bool
	killAt      time.Time     // when the stop under way sends SIGKILL
	killGrace   time.Duration // the grace that set killAt
	killed      bool          // the stop sent SIGKILL: something in the group outlived the grace
	statusDirty bool          // the last status write failed
	retrying    bool          // retryStatus is running
	dirIdentity os.FileInfo
}

// Run is the long-lived controller: it reads its request from in, writes
// controller.pid, binds 127.0.0.1:0, writes controller.port, starts the
// agent, reports ready (when started by Start) and serves until the agent
// has exited and the linger has passed, it is signalled, or its session dir
// disappears.
func Run(sessionDir string, in io.Reader) error {
	// Handle SIGTERM from the first moment, so it always means a graceful stop.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)

	var p runPayload
	if err := json.NewDecoder(io.LimitReader(in, maxRequest)).Decode(&p); err != nil {
		return fmt.Errorf("read start request: %w", err)
	}
	var ready *os.File
	if p.ReadyFD > 0 {
		syscall.CloseOnExec(p.ReadyFD) // the agent must not inherit it
		ready = os.NewFile(uintptr(p.ReadyFD), "ready")
	}
	s, err := newServer(sessionDir, p.StartRequest)
	if err == nil {
		err = s.start()
	}
	if ready != nil {
		m := readyMsg{}
		if err != nil {
			m.Error = err.Error()
		} else {
			st := s.status()
			m.StartResponse = StartResponse{PID: s.pid, Port: st.Port, StartTime: s.startTime, SessionDir: s.dir, MaxRuntimeAt: st.MaxRuntimeAt}
		}
		_ = json.NewEncoder(ready).Encode(m)
		ready.Close()
	}
	if err != nil {
		return err
	}
	return s.serve(sigc)
}

func newServer(sessionDir string, req StartRequest) (*server, error) {
	dir := filepath.Clean(sessionDir)
	if req.SessionDir == "" {
		req.SessionDir = dir
	}
	grace, linger, err := req.normalize()
	if err != nil {
		return nil, err
	}
	if req.SessionDir != dir {
		return nil, errors.New("start request: session_dir does not match --session-dir")
	}
	maxRuntime, idle, err := req.bounds()
	if err != nil {
		return nil, err
	}
	return &server{req: req, dir: dir, grace: grace, linger: linger, maxRuntime: maxRuntime, idle: idle, pid: os.Getpid(),
		kill: syscall.Kill, alive: groupAlive, outDone: make(chan struct{}), done: make(chan struct{}),
		exited: make(chan struct{}), stopDone: make(chan struct{}), logw: &logWriter{},
		rotations: map[string]rotation{}, rotateAt: LogRotateAt, logKeep: LogKeep,
		writeStatus: func(st Status) error { return writeJSONAtomic(dir, statusFile, st) }}, nil
}

// start prepares the session dir and starts the agent. The pid file comes
// first, so a controller that dies while binding can still be identified.
func (s *server) start() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return err
	}
	if err := s.refuseSecondController(); err != nil {
		return err
	}
	var err error
	if s.dirIdentity, err = os.Stat(s.dir); err != nil {
		return err
	}
	if s.startTime, _, err = procStat(s.pid); err != nil {
		return fmt.Errorf("read own start time: %w", err)
	}
	if err := fsx.WriteFile(filepath.Join(s.dir, pidFile), []byte(strconv.Itoa(s.pid)+"\n"), true); err != nil {
		return err
	}
	// Read as well as written: rotation reads its newest part back.
	if s.log, err = fsx.OpenFile(filepath.Join(s.dir, logFile), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
		return err
	}
	s.logw.w = s.sinkFor(s.log)
	if err := s.setGenerationLocked(newGeneration(1)); err != nil {
		return err
	}
	s.mask = redact.NewWriter(s.logw, s.req.Redact)
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	port := s.ln.Addr().(*net.TCPAddr).Port
	if err := fsx.WriteFile(filepath.Join(s.dir, portFile), []byte(strconv.Itoa(port)+"\n"), true); err != nil {
		return err
	}
	s.st = Status{SessionID: s.req.SessionID, State: StateStarting, ControllerPID: s.pid, Port: port,
		StopGrace: s.grace.String(), StartedAt: time.Now().UTC()}
	if err := s.writeStatusLocked(); err != nil {
		return err
	}
	s.event("controller %d listening on 127.0.0.1:%d", s.pid, port)
	return s.startAgent()
}

// refuseSecondController keeps two controllers from sharing a session dir.
func (s *server) refuseSecondController() error {
	pid, err := readPID(s.dir)
	if err != nil || pid == s.pid {
		return nil
	}
	if _, alive, _ := procStat(pid); !alive {
		return nil
	}
	if args, err := procArgs(pid); err == nil && isControllerArgs(args, s.dir) {
		return fmt.Errorf("a controller (pid %d) is already running for this session", pid)
	}
	return nil
}

// serve answers the API until it is time to exit, then stops what is left
// of the agent's group and shuts down.
func (s *server) serve(sigc <-chan os.Signal) error {
	defer func() {
		s.logMu.Lock()
		s.log.Close()
		s.logMu.Unlock()
	}()
	defer s.flushOutput()
	defer close(s.done)
	srv := &loophttp.Server{Handler: s.handle, ReadTimeout: 10 * time.Second, MaxBody: maxBody}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(capConns(s.ln)) }()
	quit := make(chan struct{})
	defer close(quit)
	gone := s.watchDir(quit)

	exited := s.exited
	var linger <-chan time.Time
	var err error
loop:
	for {
		select {
		case <-exited:
			exited, linger = nil, time.After(s.linger)
		case <-linger:
			s.event("linger %s passed: exiting", s.linger)
			break loop
		case sig := <-sigc:
			s.event("received %s: stopping", unix.SignalName(sig.(syscall.Signal)))
			break loop
		case <-gone:
			s.event("session dir removed: stopping")
			break loop
		case err = <-served:
			s.event("serving failed: %v", err)
			break loop
		}
	}
	s.stop(s.grace)
	srv.Shutdown(2 * time.Second)
	s.saveStatusAtExit()
	return err
}

// flushOutput writes what the redactor still holds back, when the agent's
// output has not ended by the time the controller exits.
func (s *server) flushOutput() {
	s.awaitOutput()
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_ = s.mask.Flush()
	s.logw.retryNotice()
	s.rotateLocked()
}

// watchDir closes the returned channel when the session dir is removed or
// replaced.
func (s *server) watchDir(quit <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		t := time.NewTicker(dirPoll)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if fi, err := os.Stat(s.dir); err != nil || !os.SameFile(fi, s.dirIdentity) {
					close(gone)
					return
				}
			}
		}
	}()
	return gone
}

// event appends a controller line to the log. Callers never pass the token,
// env values or the command.
func (s *server) event(format string, a ...any) {
	line := fmt.Sprintf("[controller] %s %s\n", timestamp(), fmt.Sprintf(format, a...))
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = s.logw.Write([]byte(line))
	s.rotateLocked()
}

// status is the current status with the log's size and losses as of now.
func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.LogBytes, st.LogGeneration = s.logBytes()
	st.LogLostBytes, st.LogLostReason = s.logw.lostBytes()
	return st
}

// writeStatusLocked records the status in status.json. A failed write is
// retried in the background until one succeeds: once the controller is
// gone, status.json is all that says how the agent ended, and a session
// whose file still says "running" is taken for lost.
func (s *server) writeStatusLocked() error {
	err := s.storeStatusLocked()
	if err != nil && !s.retrying {
		s.retrying = true
		go s.retryStatus(err)
	}
	return err
}

// storeStatusLocked writes status.json once, noting whether it failed.
func (s *server) storeStatusLocked() error {
	s.st.LogBytes, s.st.LogGeneration = s.logBytes()
	s.st.LogLostBytes, s.st.LogLostReason = s.logw.lostBytes()
	err := s.writeStatus(s.st)
	s.statusDirty = err != nil
	return err
}

// logBytes is the log's size and generation. Lock order: mu, then logMu.
func (s *server) logBytes() (int64, string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if fi, err := s.log.Stat(); err == nil {
		return fi.Size(), s.logGen
	}
	return 0, s.logGen
}
