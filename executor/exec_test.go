package executor

import (
	"strings"
	"testing"
)

// The gate passes nothing before the check's nonce line, wherever the
// writes split it, and everything after it byte for byte.
func TestVerdictGate(t *testing.T) {
	const nonce = "kandev-exec-dir-ok-0123"
	for _, c := range []struct {
		name   string
		writes []string
		passed bool
		out    string
	}{
		{"one write", []string{"motd\n" + nonce + "\nhello\n"}, true, "hello\n"},
		{"split nonce", []string{"kandev-exec-dir", "-ok-0123", "\r", "\nhel", "lo\r\n"}, true, "hello\r\n"},
		{"nothing after", []string{nonce + "\n"}, true, ""},
		{"output keeps its own nonce-like text", []string{nonce + "\n" + nonce + "\n"}, true, nonce + "\n"},
		{"refused", []string{"refuse=/srv/t\nrefuse_reason=is a symbolic link\n"}, false, ""},
	} {
		var out strings.Builder
		g := &verdictGate{w: &out, nonce: nonce}
		for _, w := range c.writes {
			if n, err := g.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", c.name, n, err)
			}
		}
		if g.passed != c.passed || out.String() != c.out {
			t.Errorf("%s: passed %v, out %q; want %v, %q", c.name, g.passed, out.String(), c.passed, c.out)
		}
		if !c.passed && !strings.Contains(g.held.String(), "refuse=/srv/t") {
			t.Errorf("%s: held %q lost the refusal", c.name, g.held.String())
		}
	}
}

// What is held before the verdict is bounded, and keeps its tail: where a
// refusal is.
func TestVerdictGateHoldsTheTail(t *testing.T) {
	g := &verdictGate{w: &strings.Builder{}, nonce: "kandev-exec-dir-ok-0123"}
	noise := strings.Repeat("a login script that talks\n", 8<<10)
	g.Write([]byte(noise))
	g.Write([]byte("refuse=/srv/t\n"))
	if g.held.Len() > heldMax || !strings.HasSuffix(g.held.String(), "refuse=/srv/t\n") {
		t.Fatalf("held %d bytes ending %q", g.held.Len(), g.held.String()[max(0, g.held.Len()-40):])
	}
}
