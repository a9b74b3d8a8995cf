package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
)

// Regression (issue 7 item 7): output the host could not write to the
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
	if err != nil || got.State != SessionExited || got.LogLostBytes != 4096 {
		t.Fatalf("session %+v, %v; want exited with 4096 log bytes lost", got, err)
	}
}
