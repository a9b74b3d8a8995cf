package controller

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRedactWriterAcrossChunks(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value"
	in := "x" + secret + "abc" + secret + secret + "ab s3cr3t-valu " + "abcab" + "s3c"
	want := "x***" + "***" + "******" + "ab s3cr3t-valu " + "***ab" + "s3c"
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		r := newRedactWriter(&out, []string{"abc", secret, ""})
		for i := 0; i < len(in); i += size {
			if _, err := r.Write([]byte(in[i:min(i+size, len(in))])); err != nil {
				t.Fatal(err)
			}
			if held := len(r.pending); held > len(secret)-1 {
				t.Fatalf("chunk %d: holds back %d bytes", size, held)
			}
		}
		if err := r.flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("chunk %d: %q, want %q", size, out.String(), want)
		}
		if _, _ = r.Write([]byte("late")); out.String() != want {
			t.Fatalf("write after flush reached the log: %q", out.String())
		}
	}
}

func TestRedactWriterWithoutSecretsPassesThrough(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newRedactWriter(&out, nil)
	r.Write([]byte("plain"))
	if out.String() != "plain" {
		t.Fatalf("%q", out.String())
	}
}

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
