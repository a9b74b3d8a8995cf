package ssh

import (
	"context"
	"errors"
	"strings"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// Dropbear with only an ed25519 host key also lists RSA algorithms, and
// hangs up when a client picks one. OpenSSH's order reaches its key, and
// the pin then works as on any server.
func TestDropbearEd25519Only(t *testing.T) {
	s := sshtest.NewDropbear(t)
	tg := targetFor(t, s)
	// Enforce never probes: the first handshake alone reaches the key.
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Enforce})
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassTrustRequired {
		t.Fatalf("unpinned: want trust_required, got %v", err)
	}
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got, want := c.Observed[0].Pin, PinOf(s.HostKeys()[0]); got != want {
		t.Fatalf("observed %v, want %v", got, want)
	}
	c, err = Dial(context.Background(), tg, DialOptions{Mode: Enforce, Pins: Pins{tg.Addr(): c.Observed[0].Pin}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, _, err := c.Run(context.Background(), "echo hi", nil); err != nil || string(out) != "hi\n" {
		t.Fatalf("run: %q %v", out, err)
	}
}

// When the first handshake is closed before a host key, the probe tries
// each key type before giving up; a dial that must not probe says the
// server hung up, not that the address is wrong.
func TestHandshakeClosedTriesEachKeyType(t *testing.T) {
	s := sshtest.NewDropbear(t)
	tg := targetFor(t, s)
	rsaFirst := map[string][]string{tg.Addr(): {xssh.KeyAlgoRSASHA256}}

	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Algorithms: rsaFirst})
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	c.Close()
	if got := c.Observed[0].KeyType; got != xssh.KeyAlgoED25519 {
		t.Fatalf("probe reached %s, want ssh-ed25519", got)
	}

	_, err = Dial(context.Background(), tg, DialOptions{Mode: Enforce, Algorithms: rsaFirst, Host: "box"})
	var e *Error
	var hc *HandshakeClosedError
	if !errors.As(err, &e) || e.Class != ClassNetwork || !errors.As(err, &hc) {
		t.Fatalf("want a closed handshake (network), got %v", err)
	}
	if !strings.Contains(err.Error(), "before presenting a host key") || !strings.Contains(e.Hint, "host test box") {
		t.Errorf("message %q, hint %q", err, e.Hint)
	}
}

// Dropbear started with -j refuses direct-tcpip without a word, and has
// no sshd_config: the refusal names its flag, not OpenSSH's settings,
// and quotes no empty reason. OpenSSH's still names sshd_config.
func TestForwardingRefusedNamesTheServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server *sshtest.Server
		hint   string
	}{
		{"dropbear", sshtest.NewDropbear(t, sshtest.WithoutTCPForwarding()), "the host runs Dropbear (SSH-2.0-dropbear_"},
		{"openssh", sshtest.NewServer(t, sshtest.WithoutTCPForwarding()), "the host's sshd_config sets `AllowTcpForwarding no`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), targetFor(t, tc.server), DialOptions{Mode: Record, Host: "box"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.DialLoopback(context.Background(), 0)
			var fr *ForwardingRefusedError
			if !errors.As(err, &fr) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if strings.Contains(err.Error(), `("")`) || !strings.Contains(err.Error(), "refuses port forwarding") {
				t.Errorf("message %q", err)
			}
			if !strings.HasPrefix(fr.Hint(), tc.hint) {
				t.Errorf("hint %q, want it to begin %q", fr.Hint(), tc.hint)
			}
			if tc.name == "dropbear" && !strings.Contains(fr.Hint(), "restart it without -j") {
				t.Errorf("hint %q names no next step", fr.Hint())
			}
		})
	}
}
