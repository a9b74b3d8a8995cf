package sshtest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"golang.org/x/crypto/ssh"
)

func signer(t *testing.T, path string) ssh.Signer {
	t.Helper()
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func clientConfig(s *sshtest.Server, sig ssh.Signer, hostKey ssh.PublicKey) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User(),
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(sig)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         5 * time.Second,
	}
}

func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	return string(out)
}

// login dials s with its user key, checks a command runs, and returns
// the client, closed when the test ends.
func login(t *testing.T, s *sshtest.Server) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if out := run(t, c, "echo hi"); out != "hi\n" {
		t.Fatalf("echo hi = %q", out)
	}
	return c
}

func openssh(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("ssh client missing (run `apt-get install openssh-client`): %v", err)
	}
	// Stdout only: the login shell's startup files may write to stderr.
	var stderr bytes.Buffer
	cmd := exec.Command("ssh", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh %v: %v: %s%s", args, err, out, stderr.Bytes())
	}
	return string(out)
}

func TestGoClientExec(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	if fi, err := os.Stat(s.UserKeyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("user key %s: %v %v", s.UserKeyPath, fi, err)
	}
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out := run(t, c, "echo hi"); out != "hi\n" {
		t.Fatalf("echo hi = %q", out)
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.RequestSubsystem("sftp"); err != nil {
		t.Fatalf("sftp subsystem: %v", err)
	}
}

func TestOpenSSHClient(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, cfg, s.HostEntry("target"))
	if out := openssh(t, "-F", cfg, "target", "echo", "hi"); out != "hi\n" {
		t.Fatalf("output %q", out)
	}
}

// A server without gzip: its sessions find every other command, not it.
func TestWithoutCommands(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t, sshtest.WithoutCommands("gzip"))
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, cfg, s.HostEntry("target"))
	out := openssh(t, "-F", cfg, "target", "command -v gzip || echo no-gzip; command -v sha256sum >/dev/null && echo has-sha256sum")
	if out != "no-gzip\nhas-sha256sum\n" {
		t.Fatalf("output %q", out)
	}
}

func TestProxyJump(t *testing.T) {
	t.Parallel()
	bastion, target := sshtest.NewServer(t), sshtest.NewServer(t)
	via := target.HostEntry("via")
	via.ProxyJump = "bastion"
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, cfg, bastion.HostEntry("bastion"), target.HostEntry("target"), via)

	openssh(t, "-F", cfg, "-J", "bastion", "target", "true")
	if out := openssh(t, "-F", cfg, "via", "echo", "hi"); out != "hi\n" {
		t.Fatalf("output %q", out)
	}
	if n := strings.Count(bastion.Log(), "Accepted publickey"); n != 2 {
		t.Fatalf("bastion accepted %d logins, want 2", n)
	}
}

func TestHostKeyTypes(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t, sshtest.WithHostKeyTypes(sshtest.KeyEd25519, sshtest.KeyECDSA, sshtest.KeyRSA))
	if n := len(s.HostKeys()); n != 3 {
		t.Fatalf("%d host keys, want 3", n)
	}
	sig := signer(t, s.UserKeyPath)
	seen := map[string]bool{}
	for keyType, algo := range map[string]string{
		sshtest.KeyEd25519: ssh.KeyAlgoED25519,
		sshtest.KeyECDSA:   ssh.KeyAlgoECDSA256,
		sshtest.KeyRSA:     ssh.KeyAlgoRSASHA256,
	} {
		fp := s.Fingerprint(keyType)
		if !strings.HasPrefix(fp, "SHA256:") || seen[fp] {
			t.Fatalf("%s fingerprint %q (seen %v)", keyType, fp, seen)
		}
		seen[fp] = true
		// The key the server actually presents for that algorithm must be the one reported.
		var got string
		cfg := clientConfig(s, sig, nil)
		cfg.HostKeyAlgorithms = []string{algo}
		cfg.HostKeyCallback = func(_ string, _ net.Addr, k ssh.PublicKey) error {
			got = ssh.FingerprintSHA256(k)
			return nil
		}
		c, err := ssh.Dial("tcp", s.Addr(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		c.Close()
		if got != fp {
			t.Fatalf("%s: server presented %s, Fingerprint says %s", algo, got, fp)
		}
	}
}

func TestRotateHostKeyAndRestart(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	sig := signer(t, s.UserKeyPath)
	oldKey, oldFP, port := s.HostKeys()[0], s.Fingerprint(sshtest.KeyEd25519), s.Port()

	s.RotateHostKey()
	if s.Port() != port || s.Fingerprint("ssh-ed25519") == oldFP {
		t.Fatalf("after rotation: port %d (was %d), fingerprint %s (was %s)", s.Port(), port, s.Fingerprint("ssh-ed25519"), oldFP)
	}
	if _, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, sig, oldKey)); err == nil {
		t.Fatal("dial with the old pinned key succeeded")
	}

	// Stop must take live sessions down with sshd, as a host going down would.
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, sig, s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("exec sleep 601"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err := <-waited:
		if err == nil {
			t.Fatal("session survived Stop")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("session still running 10s after Stop")
	}
	if out, err := exec.Command("pgrep", "-fx", "sleep 601").Output(); err == nil {
		t.Fatalf("remote command survived Stop: pid %s", out)
	}
	if _, err := net.Dial("tcp", s.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial stopped server: %v", err)
	}
	s.Start()
	c, err = ssh.Dial("tcp", s.Addr(), clientConfig(s, sig, s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestNewUserKeyWithPassphrase(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	path, pub := s.NewUserKey(t, "secret")
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var missing *ssh.PassphraseMissingError
	if _, err := ssh.ParsePrivateKey(pem); !errors.As(err, &missing) {
		t.Fatalf("parse without passphrase: %v", err)
	}
	sig, err := ssh.ParsePrivateKeyWithPassphrase(pem, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sig.PublicKey().Marshal(), pub.Marshal()) {
		t.Fatal("returned public key does not match the private key")
	}
	cfg := clientConfig(s, sig, s.HostKeys()[0])
	if _, err := ssh.Dial("tcp", s.Addr(), cfg); err == nil {
		t.Fatal("unauthorized key logged in")
	}
	s.AuthorizeKey(pub)
	c, err := ssh.Dial("tcp", s.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestRelayPassToSSHD(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	r := sshtest.NewRelay(t, s.Addr())
	c, err := ssh.Dial("tcp", r.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out := run(t, c, "echo hi"); out != "hi\n" {
		t.Fatalf("echo hi = %q", out)
	}
}

func TestRelayBlackhole(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t)
	r := sshtest.NewRelay(t, s.Addr())
	r.Blackhole()
	conn, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	_, _, _, err = ssh.NewClientConn(conn, r.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("handshake through blackhole: %v, want a timeout", err)
	}
}

func TestRelayRefuseAndReset(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	r := sshtest.NewRelay(t, echo)
	r.Refuse()
	if _, err := net.Dial("tcp", r.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial refusing relay: %v", err)
	}

	r.Reset()
	// On loopback the RST can beat the dial's completion, so either step may report it.
	conn, err := net.Dial("tcp", r.Addr())
	if err == nil {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("connect or read through reset relay: %v", err)
	}

	r.Pass()
	roundTrip(t, r.Addr())
}

func TestRelayDelay(t *testing.T) {
	t.Parallel()
	r := sshtest.NewRelay(t, echoServer(t))
	const d = 100 * time.Millisecond
	r.Delay(d)
	// Each direction is delayed, so a round trip takes at least 2d. No upper bound: CI is slow.
	if rtt := roundTrip(t, r.Addr()); rtt < 2*d {
		t.Fatalf("round trip %v, want >= %v", rtt, 2*d)
	}
}

// A capped relay takes at least size/rate to carry a stream, and counts
// what it carried: both directions through an echo server.
func TestRelayLimitAndBytes(t *testing.T) {
	t.Parallel()
	r := sshtest.NewRelay(t, echoServer(t))
	const size, rate = 256 << 10, 512 << 10
	r.Limit(rate)
	conn, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	go conn.Write(make([]byte, size))
	if _, err := io.ReadFull(conn, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if took, least := time.Since(start), time.Duration(size)*time.Second/rate; took < least {
		t.Fatalf("%d bytes at %d B/s took %v, want >= %v", size, rate, took, least)
	}
	if got := r.Bytes(); got != 2*size {
		t.Fatalf("Bytes = %d, want %d (there and back)", got, 2*size)
	}
	if got := r.Bytes(); got != 0 {
		t.Fatalf("Bytes after reading = %d, want 0", got)
	}
}

func TestRelayFreezeThaw(t *testing.T) {
	t.Parallel()
	r := sshtest.NewRelay(t, echoServer(t))
	conn, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r.Freeze()
	if _, err := conn.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var ne net.Error
	if _, err := conn.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through frozen relay: %v, want a timeout", err)
	}
	r.Thaw()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(conn, buf); err != nil || buf[0] != 'x' {
		t.Fatalf("read after thaw: %q %v", buf, err)
	}
}

// roundTrip sends one byte through an echo path and returns how long the reply took.
func roundTrip(t *testing.T, addr string) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 1)
	if _, err := conn.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// Forwarding off either way: the server refuses a direct-tcpip channel,
// and sessions still run.
func TestForwardingOff(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]sshtest.Option{
		"AllowTcpForwarding no": sshtest.WithoutTCPForwarding(),
		"DisableForwarding yes": sshtest.WithForwardingDisabled(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := sshtest.NewServer(t, opt)
			c := login(t, s)
			var oce *ssh.OpenChannelError
			if _, err := c.Dial("tcp", s.Addr()); !errors.As(err, &oce) || oce.Reason != ssh.Prohibited {
				t.Fatalf("direct-tcpip: %v, want administratively prohibited", err)
			}
		})
	}
}

// MaxSessions 1: a second session channel on the same connection is
// refused while the first is open.
func TestMaxSessionsOne(t *testing.T) {
	t.Parallel()
	s := sshtest.NewServer(t, sshtest.WithMaxSessions(1))
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if second, err := c.NewSession(); err == nil {
		second.Close()
		t.Fatal("a second session opened, want it refused")
	}
}

// Dropbear with only an ed25519 host key: it serves that key, runs
// commands and honours forwarding off, and its keys leave the login
// user's authorized_keys with the test.
func TestDropbear(t *testing.T) {
	t.Parallel()
	var marker string
	t.Run("serves", func(t *testing.T) {
		s := sshtest.NewDropbear(t, sshtest.WithoutTCPForwarding())
		marker = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.UserPublicKey)))
		cfg := clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0])
		cfg.HostKeyAlgorithms = []string{ssh.KeyAlgoED25519}
		c, err := ssh.Dial("tcp", s.Addr(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if out := run(t, c, "echo hi"); out != "hi\n" {
			t.Fatalf("echo hi = %q", out)
		}
		if _, err := c.Dial("tcp", s.Addr()); err == nil {
			t.Fatal("direct-tcpip opened with forwarding off")
		}
	})
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(home, ".ssh", "authorized_keys"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if strings.Contains(string(b), marker) {
		t.Fatal("the fixture's key is still authorized after its test")
	}
}

// Two tests' Dropbear servers share ~/.ssh/authorized_keys, and their
// directories have the same name (t.TempDir's 001): one test ending
// removes only its own lines, the other's key still logs in.
func TestDropbearKeysOutliveAnotherTests(t *testing.T) {
	t.Parallel()
	s := sshtest.NewDropbear(t)
	t.Run("another", func(t *testing.T) { sshtest.NewDropbear(t) })
	cfg := clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0])
	cfg.HostKeyAlgorithms = []string{ssh.KeyAlgoED25519}
	c, err := ssh.Dial("tcp", s.Addr(), cfg)
	if err != nil {
		t.Fatalf("after another test's server ended: %v", err)
	}
	defer c.Close()
	if out := run(t, c, "echo hi"); out != "hi\n" {
		t.Fatalf("echo hi = %q", out)
	}
}

// OpenSSH behind a ProxyCommand, both ways: busybox nc, and ssh -W
// through a bastion.
func TestProxyCommand(t *testing.T) {
	t.Parallel()
	bastion, target := sshtest.NewServer(t), sshtest.NewServer(t)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	nc, w := target.HostEntry("nc"), target.HostEntry("w")
	nc.ProxyCommand, w.ProxyCommand = sshtest.ProxyNC, sshtest.ProxyW(cfg, "bastion")
	sshtest.WriteSSHConfig(t, cfg, bastion.HostEntry("bastion"), nc, w)
	for _, alias := range []string{"nc", "w"} {
		if out := openssh(t, "-F", cfg, alias, "echo", "hi"); out != "hi\n" {
			t.Fatalf("%s: output %q", alias, out)
		}
	}
	if n := strings.Count(bastion.Log(), "Accepted publickey"); n != 1 {
		t.Fatalf("bastion accepted %d logins, want 1 (ssh -W)", n)
	}
}

// Certificate-only user auth: the user key's certificate logs in, the
// bare key does not.
func TestTrustedUserCA(t *testing.T) {
	t.Parallel()
	ca := sshtest.NewCA(t)
	s := sshtest.NewServer(t, sshtest.WithTrustedUserCA(ca))
	if s.UserCertPath != s.UserKeyPath+"-cert.pub" {
		t.Fatalf("user certificate at %q", s.UserCertPath)
	}
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, cfg, s.HostEntry("target"))
	if out := openssh(t, "-F", cfg, "target", "echo", "hi"); out != "hi\n" {
		t.Fatalf("output %q", out)
	}
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, signer(t, s.UserKeyPath), s.HostKeys()[0]))
	if err == nil {
		c.Close()
		t.Fatal("the bare key logged in on a certificate-only server")
	}
}

// A host certificate that OpenSSH's client accepts through
// @cert-authority, and refuses once RecertifyHost made it expired.
func TestHostCertificate(t *testing.T) {
	t.Parallel()
	ca := sshtest.NewCA(t)
	s := sshtest.NewServer(t, sshtest.WithHostCertificate(ca, sshtest.Cert{Principals: []string{"127.0.0.1"}}))
	cert := s.HostCertificate(sshtest.KeyEd25519)
	if !bytes.Equal(cert.Key.Marshal(), s.HostKeys()[0].Marshal()) || cert.CertType != ssh.HostCert {
		t.Fatalf("certificate of another key, or not a host certificate: %+v", cert)
	}
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	line := "@cert-authority 127.0.0.1 " + string(ssh.MarshalAuthorizedKey(ca.PublicKey))
	if err := os.WriteFile(known, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + known, "-o", "StrictHostKeyChecking=yes",
		"-i", s.UserKeyPath, "-p", fmt.Sprint(s.Port()), s.User() + "@127.0.0.1"}
	if out := openssh(t, append(args, "echo", "hi")...); out != "hi\n" {
		t.Fatalf("output %q", out)
	}
	s.RecertifyHost(sshtest.Cert{Principals: []string{"127.0.0.1"}, Validity: "-2d:-1d"})
	if renewed := s.HostCertificate(sshtest.KeyEd25519); bytes.Equal(renewed.Marshal(), cert.Marshal()) ||
		!bytes.Equal(renewed.Key.Marshal(), cert.Key.Marshal()) {
		t.Fatal("RecertifyHost must certify the same key anew")
	}
	if out, err := exec.Command("ssh", append(args, "true")...).CombinedOutput(); err == nil {
		t.Fatalf("ssh accepted an expired host certificate: %s", out)
	}
}
