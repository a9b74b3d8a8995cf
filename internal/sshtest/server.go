// Package sshtest runs a real OpenSSH sshd on loopback for tests, and a TCP relay that injects
// network faults in front of it.
//
// A bastion is just another Server: AllowTcpForwarding is on unless WithoutTCPForwarding, so
// `ProxyJump` through it works.
package sshtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	sshdPath     = "/usr/sbin/sshd" // sshd re-executes itself, so it must be started by absolute path.
	readyTimeout = 10 * time.Second
	startTries   = 5

	// Tests fan out many concurrent sessions; sshd's default of 10 drops them.
	defaultMaxSessions = 50
)

// Server is a running sshd owned by one test. It is safe for concurrent use.
type Server struct {
	// UserKeyPath is an unencrypted ed25519 private key (0600) authorized to log in as User().
	// Its public half is at UserKeyPath+".pub".
	UserKeyPath   string
	UserPublicKey ssh.PublicKey

	t        testing.TB
	dir      string
	user     string
	keyTypes []string
	pathDir  string // sessions' PATH when commands are withheld (WithoutCommands)
	logLevel string

	tcpForwarding     bool // AllowTcpForwarding (WithoutTCPForwarding turns it off)
	disableForwarding bool // DisableForwarding yes (WithForwardingDisabled)
	maxSessions       int  // MaxSessions (WithMaxSessions)

	dropbear bool       // NewDropbear's: Dropbear instead of OpenSSH's sshd
	login    *loginUser // WithLoginUser's
	userCA   *CA        // WithTrustedUserCA
	hostCA   *CA        // WithHostCertificate, certifying hostCert
	hostCert Cert

	// UserCertPath is the user key's certificate, with WithTrustedUserCA.
	UserCertPath string

	mu       sync.Mutex
	port     int
	hostKeys []hostKey
	userKeys int
	cmd      *exec.Cmd
	exited   chan struct{}
	log      Buffer
}

type hostKey struct {
	keyType string
	path    string
	pub     ssh.PublicKey
}

// Option configures NewServer.
type Option func(*Server)

// WithHostKeyTypes sets the host key types (KeyEd25519, KeyECDSA, KeyRSA); the default is ed25519 only.
func WithHostKeyTypes(types ...string) Option {
	return func(s *Server) { s.keyTypes = types }
}

// WithLogLevel sets sshd's LogLevel (VERBOSE by default): DEBUG1 logs
// every channel a client opens ("server_input_channel_open: ctype
// session"), for tests that count what a command asks of the host.
func WithLogLevel(level string) Option {
	return func(s *Server) { s.logLevel = level }
}

// WithoutTCPForwarding sets AllowTcpForwarding no, the common hardening:
// the server refuses every direct-tcpip channel (so the Server can no
// longer be a ProxyJump bastion).
func WithoutTCPForwarding() Option {
	return func(s *Server) { s.tcpForwarding = false }
}

// WithForwardingDisabled sets DisableForwarding yes, which turns off
// every kind of forwarding whatever AllowTcpForwarding says.
func WithForwardingDisabled() Option {
	return func(s *Server) { s.disableForwarding = true }
}

// WithMaxSessions sets MaxSessions (50 by default): with 1, a connection
// holds one session channel at a time, as on servers that allow no more.
func WithMaxSessions(n int) Option {
	return func(s *Server) { s.maxSessions = n }
}

// WithoutCommands gives every session a PATH that finds each command of
// the standard directories except names: a host without gzip, say. The
// commands stay reachable by absolute path; what a script finds with
// `command -v` is what is withheld.
func WithoutCommands(names ...string) Option {
	return func(s *Server) {
		dir := filepath.Join(s.dir, "path")
		if err := os.Mkdir(dir, 0o755); err != nil {
			s.t.Fatalf("sshtest: %v", err)
		}
		withheld := map[string]bool{}
		for _, n := range names {
			withheld[n] = true
		}
		for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			es, _ := os.ReadDir(d)
			for _, e := range es {
				link := filepath.Join(dir, e.Name())
				if withheld[e.Name()] {
					continue
				}
				if _, err := os.Lstat(link); err == nil {
					continue // an earlier directory's wins, as in a PATH search
				}
				if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
					s.t.Fatalf("sshtest: %v", err)
				}
			}
		}
		s.pathDir = dir
	}
}

// WithBusyboxPath gives every session a PATH that holds only busybox's
// applets, as on a minimal (Alpine-like) host: no git, no bash, and
// busybox's own sh, gzip, sha256sum and uname.
func WithBusyboxPath() Option {
	return func(s *Server) {
		bb, err := exec.LookPath("busybox")
		if err != nil {
			s.t.Fatalf("sshtest: busybox is missing (run `apt-get install busybox`): %v", err)
		}
		out, err := exec.Command(bb, "--list").Output()
		if err != nil {
			s.t.Fatalf("sshtest: busybox --list: %v", err)
		}
		dir := filepath.Join(s.dir, "busybox-path")
		if err := os.Mkdir(dir, 0o755); err != nil {
			s.t.Fatalf("sshtest: %v", err)
		}
		for _, applet := range strings.Fields(string(out)) {
			if err := os.Symlink(bb, filepath.Join(dir, applet)); err != nil {
				s.t.Fatalf("sshtest: %v", err)
			}
		}
		s.pathDir = dir
	}
}

// NewServer starts sshd on a free 127.0.0.1 port in a fresh temp dir, and stops it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		t.Fatalf("sshtest: %s is missing (run `apt-get install openssh-server`): %v", sshdPath, err)
	}
	return newServer(t, opts).start()
}

// newServer applies opts to a server that is not started yet.
func newServer(t testing.TB, opts []Option) *Server {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: current user: %v", err)
	}
	s := &Server{t: t, dir: t.TempDir(), user: u.Username, keyTypes: []string{KeyEd25519}, logLevel: "VERBOSE",
		tcpForwarding: true, maxSessions: defaultMaxSessions}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// start makes the user key and the host keys and starts the server.
func (s *Server) start() *Server {
	t := s.t
	t.Helper()
	if os.Geteuid() == 0 && !s.dropbear {
		// sshd running as root refuses to start without its privilege separation directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshtest: %v", err)
		}
	}
	if s.dropbear && (s.userCA != nil || s.hostCA != nil) {
		t.Fatal("sshtest: Dropbear has no certificates")
	}
	s.UserKeyPath, s.UserPublicKey = s.NewUserKey(t, "")
	s.AuthorizeKey(s.UserPublicKey)
	if s.userCA != nil {
		s.UserCertPath = s.userCA.SignUserKey(t, s.UserKeyPath+".pub", Cert{Principals: []string{s.user}})
	}

	// Registered after t.TempDir, so the server is gone before its directory is removed.
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("server log:\n%s", s.Log())
		}
	})

	s.mu.Lock()
	defer s.mu.Unlock()
	s.generateHostKeys()
	s.startLocked(true)
	return s
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())) }

// Port returns the TCP port; it stays the same across Stop/Start and RotateHostKey.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// User returns the login name, which is the user running the test.
func (s *Server) User() string { return s.user }

// Log returns everything sshd has logged so far, across restarts.
func (s *Server) Log() string { return s.log.String() }

// HostKeys returns the current host public keys, in WithHostKeyTypes order.
func (s *Server) HostKeys() []ssh.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]ssh.PublicKey, len(s.hostKeys))
	for i, k := range s.hostKeys {
		keys[i] = k.pub
	}
	return keys
}

// Fingerprint returns the "SHA256:..." fingerprint of the host key of keyType, given either as
// KeyEd25519/KeyECDSA/KeyRSA or as the SSH algorithm name (e.g. "ssh-ed25519").
func (s *Server) Fingerprint(keyType string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.hostKeys {
		if k.keyType == keyType || k.pub.Type() == keyType {
			return ssh.FingerprintSHA256(k.pub)
		}
	}
	s.t.Fatalf("sshtest: server has no %s host key", keyType)
	return ""
}

// AuthorizeKey lets pub log in as User(). The server rereads its keys on every login, so no
// restart is needed.
func (s *Server) AuthorizeKey(pub ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropbear {
		if err := s.authorizeHomeKey(pub); err != nil {
			s.t.Fatalf("sshtest: authorize key: %v", err)
		}
		return
	}
	f, err := os.OpenFile(s.authorizedKeysPath(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.Write(ssh.MarshalAuthorizedKey(pub))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = s.shareAuthorizedKeys()
	}
	if err != nil {
		s.t.Fatalf("sshtest: authorize key: %v", err)
	}
}

// NewUserKey writes a new ed25519 key pair (encrypted when passphrase is set) and returns the
// private key path (public half at path+".pub"). The key is not authorized; see AuthorizeKey.
func (s *Server) NewUserKey(t testing.TB, passphrase string) (privPath string, pub ssh.PublicKey) {
	t.Helper()
	s.mu.Lock()
	s.userKeys++
	privPath = filepath.Join(s.dir, fmt.Sprintf("id_ed25519_%d", s.userKeys))
	s.mu.Unlock()
	pub, err := writeKeyPair(privPath, KeyEd25519, passphrase)
	if err != nil {
		t.Fatalf("sshtest: user key: %v", err)
	}
	return privPath, pub
}

// Stop kills sshd and every session it spawned, as a host going down would. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

// Start restarts a stopped server on the same port with the same host keys.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.startLocked(false)
	}
}

// RotateHostKey restarts sshd on the same port with freshly generated host keys of the same
// types, so clients that pinned the old keys see a changed host key.
func (s *Server) RotateHostKey() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	s.generateHostKeys()
	s.startLocked(false)
}

func (s *Server) authorizedKeysPath() string { return filepath.Join(s.dir, "authorized_keys") }

func (s *Server) generateHostKeys() {
	s.hostKeys = s.hostKeys[:0]
	for _, kt := range s.keyTypes {
		path := filepath.Join(s.dir, "ssh_host_"+kt+"_key")
		write := writeKeyPair
		if s.dropbear {
			write = func(path, kt, _ string) (ssh.PublicKey, error) { return dropbearHostKey(path, kt) }
		}
		pub, err := write(path, kt, "")
		if err != nil {
			s.t.Fatalf("sshtest: host key: %v", err)
		}
		s.hostKeys = append(s.hostKeys, hostKey{keyType: kt, path: path, pub: pub})
	}
	s.certifyHostKeysLocked()
}

// startLocked starts sshd and waits until it serves an SSH banner. With newPort it picks a free
// port per attempt, because another process may grab the port between our probe and sshd's bind.
func (s *Server) startLocked(newPort bool) {
	s.t.Helper()
	var lastErr error
	for range startTries {
		if newPort {
			port, err := freePort()
			if err != nil {
				s.t.Fatalf("sshtest: %v", err)
			}
			s.port = port
		}
		mark := s.log.Len()
		lastErr = s.launchLocked(mark)
		if lastErr == nil {
			return
		}
		s.killLocked()
		if !strings.Contains(s.log.Since(mark), "Address already in use") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("sshtest: server did not start: %v", lastErr) // the cleanup prints its log
}

func (s *Server) launchLocked(mark int) error {
	start := s.sshdCommand
	if s.dropbear {
		start = s.dropbearCommand
	}
	cmd, err := start()
	if err != nil {
		return err
	}
	fmt.Fprintf(&s.log, "--- sshtest: starting %s on port %d\n", filepath.Base(cmd.Path), s.port)
	cmd.Stdout = &s.log
	cmd.Stderr = &s.log
	// A session child that outlives sshd could hold the log pipe open; don't let Wait hang on it.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return s.waitReady(mark)
}

// sshdCommand is sshd in the foreground, logging to stderr, with this server's config.
func (s *Server) sshdCommand() (*exec.Cmd, error) {
	cfg, err := s.writeSSHDConfig()
	if err != nil {
		return nil, err
	}
	args := []string{"-D", "-e", "-f", cfg}
	if penaltiesSupported(cfg) {
		// OpenSSH 9.8+ penalises a source address for failed or dropped connections; every test
		// connects from 127.0.0.1 and fault tests drop connections on purpose.
		args = append(args, "-o", "PerSourcePenalties=no")
	}
	return exec.Command(sshdPath, args...), nil
}

func (s *Server) waitReady(mark int) error {
	// sshd's log line proves that *our* sshd bound the port; Dropbear logs none, but a Dropbear
	// banner on a port sshd holds everywhere else is ours. The banner proves it serves.
	listening := fmt.Sprintf("Server listening on 127.0.0.1 port %d", s.port)
	banner := "SSH-"
	if s.dropbear {
		listening, banner = "Not backgrounding", "SSH-2.0-dropbear"
	}
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("server exited: %v", s.cmd.ProcessState)
		default:
		}
		if strings.Contains(s.log.Since(mark), listening) && readBanner(s.port, banner) == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no SSH banner on port %d within %v", s.port, readyTimeout)
}

func readBanner(port int, prefix string) error {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, prefix) {
		return fmt.Errorf("unexpected banner %q", line)
	}
	return nil
}

// killLocked kills sshd and every process below it, then waits for sshd to exit.
func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	killTree(s.cmd.Process.Pid)
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

var (
	penaltiesOnce sync.Once
	penaltiesOK   bool
)

// penaltiesSupported asks sshd once per test binary whether it knows PerSourcePenalties.
func penaltiesSupported(cfg string) bool {
	penaltiesOnce.Do(func() {
		penaltiesOK = exec.Command(sshdPath, "-t", "-f", cfg, "-o", "PerSourcePenalties=no").Run() == nil
	})
	return penaltiesOK
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Buffer is output one goroutine writes (sshd's log, a session's
// output) while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *Buffer) String() string { return b.Since(0) }

// Since returns what was written after the first mark bytes.
func (b *Buffer) Since(mark int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[mark:])
}
