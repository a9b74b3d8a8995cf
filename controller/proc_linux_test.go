package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/procstat"
)

func TestControllerOutlivesParent(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "sleep 30")
	in, _ := json.Marshal(req)
	parent := exec.Command(os.Args[0], "controller", "start")
	parent.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	parent.Stdout, parent.Stderr = &out, &errOut
	done := make(chan error, 1)
	go func() { done <- parent.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("controller start: %v: %s", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("controller start did not return")
	}
	var resp StartResponse
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	t.Cleanup(func() { reap(t, req.SessionDir, resp.StartTime) })
	if alive(t, parent.Process.Pid) {
		t.Fatal("parent still alive")
	}
	f, err := procstat.Of(resp.PID)
	if err != nil {
		t.Fatal(err)
	}
	if f[1] == strconv.Itoa(parent.Process.Pid) || f[3] != strconv.Itoa(resp.PID) {
		t.Fatalf("controller ppid %s session %s; want reparented and its own session", f[1], f[3])
	}
	c := NewClient(nil, resp.Port, req.Token)
	if _, err := c.Health(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("controller not serving after its parent exited: %v", err)
	}
	if st, err := c.Status(ctxFor(t, 5*time.Second)); err != nil || st.State != StateRunning {
		t.Fatalf("status %+v %v", st, err)
	}
}

func TestSecretsStayOffArgvAndDisk(t *testing.T) {
	t.Setenv("KANDEV_TEST_OVERRIDE", "from-controller")
	secret := "s3cret-" + randomToken(t) // 47 bytes
	req := newRequest(t, `[ ${#API_KEY} = 47 ] && [ "$KANDEV_TEST_OVERRIDE" = from-request ] && echo env-ok; sleep 30`)
	req.Env = map[string]string{"API_KEY": secret, "KANDEV_TEST_OVERRIDE": "from-request"}
	s := start(t, req)
	waitFor(t, 5*time.Second, "the agent to see its env", func() bool { return strings.Contains(readLog(t, s), "env-ok") })
	agent := waitState(t, s, StateRunning).AgentPID
	secrets := [][]byte{[]byte(secret), []byte(req.Token)}
	holds := func(b []byte, which [][]byte) bool {
		for _, n := range which {
			if bytes.Contains(b, n) {
				return true
			}
		}
		return false
	}
	check := func(stage string) {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && holds(b, secrets) {
				t.Errorf("%s: /proc/%s/cmdline holds a secret: %q", stage, e.Name(), b)
			}
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(s.resp.PID) + "/environ"); err != nil || holds(b, secrets) {
			t.Errorf("%s: the controller's environment holds a secret (%v)", stage, err)
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(agent) + "/environ"); err == nil && holds(b, secrets[1:]) {
			t.Errorf("%s: the agent's environment holds the token", stage)
		}
		err = filepath.WalkDir(req.SessionDir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if errors.Is(err, os.ErrNotExist) {
				return nil // a status.json temp file renamed away meanwhile
			}
			if err != nil {
				return err
			}
			if want := os.FileMode(0o600); d.IsDir() {
				if fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %s has mode %v, want 0700", stage, p, fi.Mode().Perm())
				}
			} else if fi.Mode().Perm() != want {
				t.Errorf("%s: %s has mode %v, want %v", stage, p, fi.Mode().Perm(), want)
			}
			if b, err := os.ReadFile(p); err == nil && holds(b, secrets) {
				t.Errorf("%s: %s holds a secret", stage, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("running")
	if _, err := s.c.Drain(ctxFor(t, 10*time.Second), "claim-secret", 0); err != nil {
		t.Fatal(err)
	}
	check("drained")
}
