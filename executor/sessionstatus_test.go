package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
)

// Regression: output the host could not write to the
// session's log is counted in the session record, from the controller's
// status, so `session show` can say so.
func TestSessionRecordsLostLogBytes(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, s.PID)
	// What a controller that hit a full disk leaves in status.json.
	path := filepath.Join(s.SessionDir, "status.json")
	st, err := controller.ReadStatusFile(s.SessionDir)
	if err != nil {
		t.Fatal(err)
	}
	st.LogLostBytes, st.LogLostReason = 4096, "write controller.log: no space left on device"
	b, _ := json.Marshal(st)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.exec.RefreshSession(ctx, s.ID)
	if err != nil || got.State != records.SessionExited || got.LogLostBytes != 4096 {
		t.Fatalf("session %+v, %v; want exited with 4096 log bytes lost", got, err)
	}
}

// A controller refusing connections because another local user holds all
// it serves is reported as such: the session is neither probed nor
// settled, and stays running.
func TestRefreshBusyControllerSaysSo(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.exec.StopSession(ctx, s.ID)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// More than the controller serves: the rest wait or are refused.
	for range 40 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.RemotePort))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if _, err := io.WriteString(c, "GET /v1/health?nonce=x HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.exec.RefreshSession(ctx, s.ID)
	if !errors.Is(err, controller.ErrBusy) || !strings.Contains(err.Error(), "refuses new connections") {
		t.Fatalf("refresh of a busy controller: %v", err)
	}
	if got, _, err = f.exec.GetSession(ctx, s.ID); err != nil || got.State != records.SessionRunning {
		t.Fatalf("session after the refusal: %+v, %v; want still running", got, err)
	}
}
