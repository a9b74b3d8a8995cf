package helper

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
)

// One sessions-probe answers for every session asked, in order: a gone
// directory, a controller that ended and wrote how, a pid reused by
// another process (whose files are then read), and an unreadable pid
// file, which fails that session alone.
func TestSessionsProbeAnswersEachSession(t *testing.T) {
	root := t.TempDir()
	dir := func(name, pid string, st *controller.Status) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, "controller.pid"), []byte(pid+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if st != nil {
			b, _ := json.Marshal(st)
			if err := os.WriteFile(filepath.Join(d, "status.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	code := 3
	req := protocol.SessionsRequest{Sessions: []protocol.SessionRequest{
		{SessionDir: filepath.Join(root, "missing"), StartTime: 7},
		{SessionDir: dir("exited", strconv.Itoa(gone.Process.Pid), &controller.Status{State: controller.StateExited, ExitCode: &code}), StartTime: 7},
		{SessionDir: dir("reused", strconv.Itoa(os.Getpid()), &controller.Status{State: controller.StateRunning}), StartTime: 1},
		{SessionDir: dir("garbled", "not-a-pid", nil), StartTime: 7},
	}}
	var rep protocol.SessionsReport
	if err := protocol.ReadAnswer(bytes.NewReader(serve(t, request(t, protocol.OpSessionsProbe, req))), &rep, nil); err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 4 {
		t.Fatalf("%d reports for 4 sessions: %+v", len(rep.Sessions), rep)
	}
	missing, exited, reused, garbled := rep.Sessions[0], rep.Sessions[1], rep.Sessions[2], rep.Sessions[3]
	if missing.Identity.Alive || missing.Error != "" || missing.Files == nil || missing.Files.PID != 0 || missing.Files.Status != nil {
		t.Errorf("missing dir: %+v", missing)
	}
	if exited.Identity.Alive || exited.Files == nil || exited.Files.Status == nil || exited.Files.Status.State != controller.StateExited || *exited.Files.Status.ExitCode != 3 {
		t.Errorf("exited: %+v", exited)
	}
	if !reused.Identity.Alive || reused.Identity.Ours || reused.Files == nil || reused.Files.PID != os.Getpid() {
		t.Errorf("reused pid: %+v", reused)
	}
	if garbled.Error == "" || garbled.Files != nil {
		t.Errorf("garbled pid file: %+v", garbled)
	}
}
