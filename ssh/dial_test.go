package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// targetFor resolves a fixture server directly, without any ssh config.
func targetFor(t *testing.T, s *sshtest.Server, jumps ...*sshtest.Server) *sshconfig.Target {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var spec []string
	for _, j := range jumps {
		spec = append(spec, fmt.Sprintf("%s@127.0.0.1:%d", j.User(), j.Port()))
		j.AuthorizeKey(s.UserPublicKey)
	}
	ov := sshconfig.Overrides{Port: s.Port(), User: s.User(), IdentityFiles: []string{s.UserKeyPath}, IdentitiesOnly: true, ProxyJump: strings.Join(spec, ",")}
	tg, err := sshconfig.Resolve(context.Background(), "127.0.0.1", ov, sshconfig.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range tg.Jumps {
		j.IdentityFiles, j.IdentitiesOnly = []string{s.UserKeyPath}, true
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	return tg
}

func pinsOf(t *sshconfig.Target, keys map[string]xssh.PublicKey) Pins {
	p := Pins{}
	for addr, k := range keys {
		p[addr] = PinOf(k)
	}
	return p
}

// A server with several host keys keeps negotiating the pinned one, for
// every key type it has.
func TestPinnedAlgorithmIsNegotiated(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.WithHostKeyTypes(sshtest.KeyEd25519, sshtest.KeyECDSA, sshtest.KeyRSA))
	tg := targetFor(t, s)
	for _, key := range s.HostKeys() {
		t.Run(key.Type(), func(t *testing.T) {
			c, err := Dial(context.Background(), tg, DialOptions{Pins: pinsOf(tg, map[string]xssh.PublicKey{tg.Addr(): key}), Mode: Enforce})
			if err != nil {
				t.Fatalf("pinned %s: %v", key.Type(), err)
			}
			defer c.Close()
			if got := c.Observed[0].Pin; got != PinOf(key) {
				t.Errorf("negotiated %v, pinned %v", got, PinOf(key))
			}
		})
	}
}

func TestEnforceWithoutPinIsTrustRequired(t *testing.T) {
	s := sshtest.NewServer(t)
	tg := targetFor(t, s)
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Enforce})
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassTrustRequired {
		t.Fatalf("want trust_required, got %v", err)
	}
	if !strings.Contains(e.Hint, "host trust") {
		t.Errorf("hint should name `host trust`: %q", e.Hint)
	}
	if len(e.Observed) != 1 || e.Observed[0].Fingerprint != s.Fingerprint(sshtest.KeyEd25519) {
		t.Errorf("observed keys must be reported on failure: %+v", e.Observed)
	}
}

// Regression: a mismatch on a jump host fails closed before the target is
// ever contacted, naming the hop.
func TestHopPinMismatchFailsClosed(t *testing.T) {
	target, bastion := sshtest.NewServer(t), sshtest.NewServer(t)
	tg := targetFor(t, target, bastion)
	other := sshtest.NewServer(t)
	pins := Pins{tg.Jumps[0].Addr(): PinOf(other.HostKeys()[0]), tg.Addr(): PinOf(target.HostKeys()[0])}
	_, err := Dial(context.Background(), tg, DialOptions{Pins: pins, Mode: Enforce})
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassHostKey {
		t.Fatalf("want host_key, got %v", err)
	}
	if !strings.Contains(e.Hop, fmt.Sprint(bastion.Port())) || len(e.Observed) != 1 {
		t.Errorf("the failing hop must be the bastion, and the target never reached: hop %q observed %+v", e.Hop, e.Observed)
	}
	var hk *HostKeyChangedError
	if !errors.As(err, &hk) || !strings.HasPrefix(err.Error(), "127.0.0.1 via hop") {
		t.Errorf("message: %v", err)
	}
}

// Each hop's connection is closed when the target's closes.
func TestHopsClosedWithTarget(t *testing.T) {
	target, b1, b2 := sshtest.NewServer(t), sshtest.NewServer(t), sshtest.NewServer(t)
	tg := targetFor(t, target, b1, b2)
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.hops) != 2 || len(c.Observed) != 3 {
		t.Fatalf("want 2 hops and 3 observed keys, got %d and %d", len(c.hops), len(c.Observed))
	}
	out, _, err := c.Run(context.Background(), "echo $((6*7))", nil)
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("run through two hops: %q %v", out, err)
	}
	// Kill the target's side: the hops must follow without our Close.
	c.Client.Close()
	for i, h := range c.hops {
		done := make(chan struct{})
		go func() { h.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("hop %d still open after the target closed", i)
		}
	}
}

// The handshake has a deadline even though x/crypto has none: a
// blackholed server and a blackholed hop both fail as timeouts.
func TestHandshakeDeadline(t *testing.T) {
	s := sshtest.NewServer(t)
	relay := sshtest.NewRelay(t, s.Addr())
	tg := targetFor(t, s)
	tg.Port = relay.Port()
	relay.Blackhole()
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Timeout: 500 * time.Millisecond})
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassTimeout {
		t.Fatalf("want timeout, got %v", err)
	}

	// Behind a healthy bastion: the channel through it has no deadline of
	// its own, so the bound must still hold.
	bastion := sshtest.NewServer(t)
	tg = targetFor(t, s, bastion)
	tg.Port = relay.Port()
	_, err = Dial(context.Background(), tg, DialOptions{Mode: Record, Timeout: 500 * time.Millisecond})
	if !errors.As(err, &e) || e.Class != ClassTimeout || !strings.Contains(e.Hop, fmt.Sprint(relay.Port())) {
		t.Fatalf("want a timeout on the target hop, got %v", err)
	}
}

func TestRunExitStatusAndStdin(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, errb, err := c.Run(context.Background(), "cat; echo oops >&2; exit 3", strings.NewReader("in'put"))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
	if string(out) != "in'put" || strings.TrimSpace(string(errb)) != "oops" {
		t.Errorf("stdout %q stderr %q", out, errb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := c.Run(ctx, "sleep 30", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a cancelled command must return the context error, got %v", err)
	}
}
