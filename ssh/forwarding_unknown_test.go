package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// tinyServer serves SSH on loopback, taking any key, and answers every
// channel open with reason: a server built without local forwarding
// (Dropbear can be compiled so) that none of the fixture's servers is.
// It returns its port.
func tinyServer(t *testing.T, reason xssh.RejectionReason) int {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := xssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &xssh.ServerConfig{ServerVersion: "SSH-2.0-tiny_1.0",
		PublicKeyCallback: func(xssh.ConnMetadata, xssh.PublicKey) (*xssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
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
				_, chans, reqs, err := xssh.NewServerConn(c, cfg)
				if err != nil {
					c.Close()
					return
				}
				go xssh.DiscardRequests(reqs)
				for nc := range chans {
					nc.Reject(reason, "unknown channel type")
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// A server that knows no direct-tcpip channel refuses forwarding as one
// that prohibits it does: host test says so, and sessions go through the
// helper instead of failing.
func TestForwardingUnknownChannelTypeIsARefusal(t *testing.T) {
	keys := sshtest.NewServer(t) // for its user key
	cfg := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ov := sshconfig.Overrides{Port: tinyServer(t, xssh.UnknownChannelType), User: "u", IdentityFiles: []string{keys.UserKeyPath}, IdentitiesOnly: true}
	tg, err := sshconfig.Resolve(context.Background(), "127.0.0.1", ov, sshconfig.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Host: "box"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var fr *ForwardingRefusedError
	if err := c.ForwardingAllowed(context.Background()); !errors.As(err, &fr) {
		t.Fatalf("ForwardingAllowed: want a refusal, got %v", err)
	}
	if _, err := c.DialLoopback(context.Background(), 8080); !errors.As(err, &fr) {
		t.Fatalf("DialLoopback: want a refusal, got %v", err)
	}
}
