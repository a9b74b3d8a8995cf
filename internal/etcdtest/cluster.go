// Package etcdtest runs real etcd servers (the etcd binary, as Debian's
// etcd-server package installs it) on loopback for tests: one member or a
// cluster, each in a temp data dir on free ports, torn down with the test.
// Members can be killed and restarted to inject faults, and the cluster
// can serve TLS and user authentication.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	readyTimeout = 30 * time.Second
	startTries   = 3
	// Fast timings, as etcd's own test framework uses, so elections after
	// a kill take a fraction of a second. The lease floor they give is
	// 1 s (1.5 election timeouts, rounded up to whole seconds).
	heartbeatMs = 25
	electionMs  = 250
)

// Binary is the etcd executable the fixture runs.
func Binary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	const debian = "/usr/bin/etcd"
	if _, err := os.Stat(debian); err != nil {
		return "", fmt.Errorf("etcdtest: no etcd binary in PATH or at %s (run `apt-get install -y etcd-server`)", debian)
	}
	return debian, nil
}

// Cluster is a running set of etcd members owned by one test.
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	token   string
	tls     *TLSFiles
	auth    bool // EnableAuth ran: clients log in as root
	members []*Member
}

// Member is one etcd process.
type Member struct {
	Name       string
	ClientPort int
	PeerPort   int
	dataDir    string
	logPath    string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Option configures Start.
type Option func(*Cluster)

// WithTLS serves clients over TLS with generated certificates, requiring
// a client certificate signed by the same CA.
func WithTLS() Option { return func(c *Cluster) { c.tls = &TLSFiles{} } }

// Start runs an n-member cluster and stops it when the test ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, dir: t.TempDir(), token: fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), time.Now().UnixNano())}
	for _, o := range opts {
		o(c)
	}
	if c.tls != nil {
		if err := c.tls.generate(c.dir); err != nil {
			t.Fatalf("etcdtest: certificates: %v", err)
		}
	}
	t.Cleanup(c.stopAll)
	var last error
	for range startTries {
		if last = c.start(n); last == nil {
			return c
		}
		c.stopAll()
	}
	t.Fatalf("etcdtest: %v", last)
	return nil
}

// start picks ports and starts every member of a new cluster.
func (c *Cluster) start(n int) error {
	c.members = nil
	var peers []string
	for i := range n {
		cp, err := freePort()
		if err != nil {
			return err
		}
		pp, err := freePort()
		if err != nil {
			return err
		}
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientPort: cp, PeerPort: pp}
		m.dataDir = filepath.Join(c.dir, fmt.Sprintf("%s-%d.etcd", m.Name, cp))
		m.logPath = m.dataDir + ".log"
		c.members = append(c.members, m)
		peers = append(peers, fmt.Sprintf("%s=http://127.0.0.1:%d", m.Name, pp))
	}
	initial := strings.Join(peers, ",")
	for _, m := range c.members {
		if err := c.run(m, initial, "new"); err != nil {
			return err
		}
	}
	return c.waitReady()
}

func (c *Cluster) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

// run starts m's process.
func (c *Cluster) run(m *Member, initial, state string) error {
	client := fmt.Sprintf("%s://127.0.0.1:%d", c.scheme(), m.ClientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", m.PeerPort)
	args := []string{
		"--name", m.Name, "--data-dir", m.dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", initial, "--initial-cluster-state", state, "--initial-cluster-token", c.token,
		"--heartbeat-interval", strconv.Itoa(heartbeatMs), "--election-timeout", strconv.Itoa(electionMs),
		"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr",
	}
	if c.tls != nil {
		args = append(args, "--cert-file", c.tls.serverCert, "--key-file", c.tls.serverKey,
			"--trusted-ca-file", c.tls.CA, "--client-cert-auth")
	}
	log, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(c.bin, args...)
	// Only what etcd needs: ETCD_* variables in the test's environment
	// would be read as flags.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.dir}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", c.bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// waitReady waits until every running member answers and the cluster
// has a leader.
func (c *Cluster) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		if err := c.waitMember(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// waitMember waits until m answers and knows a leader.
func (c *Cluster) waitMember(ctx context.Context, m *Member) error {
	cli, err := c.Client(m.Endpoint())
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			return fmt.Errorf("member %s exited while starting:\n%s", m.Name, tail(m.logPath))
		default:
		}
		sctx, scancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.Endpoint())
		scancel()
		if err == nil && st.Leader != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %s not ready after %s (last: %v):\n%s", m.Name, readyTimeout, err, tail(m.logPath))
		case <-exited:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Endpoints are the members' client addresses (host:port), in order.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// TLS is where the client's certificate files are; nil without WithTLS.
func (c *Cluster) TLS() *TLSFiles { return c.tls }

// Endpoint is the member's client address.
func (m *Member) Endpoint() string { return fmt.Sprintf("127.0.0.1:%d", m.ClientPort) }

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Client is an etcd client of the given endpoints (all by default), as
// root when auth is on and as the client certificate with TLS.
func (c *Cluster) Client(endpoints ...string) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if c.tls != nil {
		tc, err := c.tls.ClientConfig()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	if c.auth {
		cfg.Username, cfg.Password = "root", rootPassword
	}
	return clientv3.New(cfg)
}

// Kill sends SIGKILL to member i and waits for it to die.
func (c *Cluster) Kill(i int) {
	m := c.members[i]
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	cmd.Process.Kill()
	<-exited
}

// Restart starts a killed member again on its data dir. Once a quorum is
// running it waits until every running member answers and knows a
// leader; before that no member can answer, so it returns at once.
func (c *Cluster) Restart(i int) error {
	m := c.members[i]
	if m.Running() {
		return fmt.Errorf("etcdtest: member %s is running", m.Name)
	}
	// The data dir holds the membership; --initial-* flags are ignored.
	var peers []string
	for _, o := range c.members {
		peers = append(peers, fmt.Sprintf("%s=http://127.0.0.1:%d", o.Name, o.PeerPort))
	}
	if err := c.run(m, strings.Join(peers, ","), "existing"); err != nil {
		return err
	}
	running := 0
	for _, o := range c.members {
		if o.Running() {
			running++
		}
	}
	if 2*running <= len(c.members) {
		return nil
	}
	return c.waitReady()
}

// Leader is the index of the member that leads now, asking the running
// members; -1 when none knows a leader.
func (c *Cluster) Leader(ctx context.Context) int {
	cli, err := c.Client()
	if err != nil {
		return -1
	}
	defer cli.Close()
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.Endpoint())
		cancel()
		if err != nil || st.Leader == 0 {
			continue
		}
		for i, o := range c.members {
			if !o.Running() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			ost, err := cli.Status(sctx, o.Endpoint())
			cancel()
			if err == nil && ost.Header.MemberId == st.Leader {
				return i
			}
		}
	}
	return -1
}

// WaitLeader polls until a running member leads, or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	for {
		if i := c.Leader(ctx); i >= 0 {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, errors.New("etcdtest: no leader elected: " + ctx.Err().Error())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Cluster) stopAll() {
	for _, m := range c.members {
		m.mu.Lock()
		cmd, exited := m.cmd, m.exited
		m.mu.Unlock()
		if cmd != nil {
			cmd.Process.Kill()
			<-exited
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the end of a member's log, for failure messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
