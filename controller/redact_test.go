package controller

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestAgentOutputRedacted: an agent printing a secret in pieces never gets
// it into controller.log or /v1/logs, and its other output is intact.
func TestAgentOutputRedacted(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-Zq9-very-secret"
	cmd := `printf 'one:%s\n' "$X" | dd bs=1 2>/dev/null
printf 'two:%s\n' "$X" | dd bs=3 2>/dev/null
printf 'three:%s:' "$X" | dd bs=1 2>/dev/null; sleep 0.1; echo after
printf '%s' "$X" | dd bs=5 2>/dev/null; echo " done" >&2
printf 'end:%s' "$X" | dd bs=1 2>/dev/null`
	req := newRequest(t, cmd)
	req.Env = map[string]string{"X": secret}
	req.Redact = []string{secret}
	s := start(t, req)
	waitState(t, s, StateExited)
	var served bytes.Buffer
	if _, err := s.c.Logs(ctxFor(t, 10*time.Second), 0, false, &served); err != nil {
		t.Fatal(err)
	}
	for name, log := range map[string]string{"controller.log": readLog(t, s), "/v1/logs": served.String()} {
		if strings.Contains(log, secret) || strings.Contains(log, secret[:8]) {
			t.Fatalf("%s shows the secret:\n%s", name, log)
		}
		for _, want := range []string{"one:***\n", "two:***\n", "three:***:after\n", "*** done\n", "end:***[controller] "} {
			if !strings.Contains(log, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, log)
			}
		}
		if i, j := strings.Index(log, "end:***"), strings.Index(log, "agent exited with code 0"); i < 0 || j < i {
			t.Errorf("%s: the held-back tail is not before the exit line:\n%s", name, log)
		}
	}
}

// Regression: a line of a multi-line secret printed on its own
// is masked, not only the whole value; lines too short to mask stay.
func TestAgentOutputMasksLinesOfMultiLineSecret(t *testing.T) {
	t.Parallel()
	key := "-----BEGIN TEST KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ\nab\n-----END TEST KEY-----"
	req := newRequest(t, `printf '%s\n' "$KEY" | sed -n 2p; printf '%s\n' "$KEY" | sed -n 3p | dd bs=7 2>/dev/null; echo "short: ab"; printf 'whole:%s\n' "$KEY"`)
	req.Env = map[string]string{"KEY": key}
	req.Redact = []string{key}
	s := start(t, req)
	waitState(t, s, StateExited)
	log := readLog(t, s)
	for _, line := range strings.Split(key, "\n")[1:3] {
		if strings.Contains(log, line[:10]) {
			t.Fatalf("controller.log shows a line of the key:\n%s", log)
		}
	}
	for _, want := range []string{"***\n***\nshort: ab\nwhole:***\n"} {
		if !strings.Contains(log, want) {
			t.Fatalf("controller.log lacks %q:\n%s", want, log)
		}
	}
}
