package reclaim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// sealedEnding stands for a session's controller (its argv is
// `controller <session dir>`) holding its log open. Sent a byte, it ends
// its first thread while a second one holds the log on, as the last
// threads of an exiting process do: its argv cannot be read any more.
const sealedEnding = leaderEnded + `
static void *work(void *a) {
	awaitLeaderEnded();
	write(1, "ended\n", 6);
	char c;
	read(0, &c, 1);
	write(fd, "[controller] exiting\n", 21);
	return 0;
}
int main(int argc, char **argv) {
	char path[4096];
	snprintf(path, sizeof path, "%s/controller.log", argv[2]);
	fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0) return 2;
	write(1, "ready\n", 6);
	char c;
	if (read(0, &c, 1) != 1) return 3;
	pthread_t t;
	pthread_create(&t, 0, work, 0);
	pthread_exit(0);
}
`

// sealedSession starts sealedEnding as the controller of dir's session
// s-1, recorded there as sealed by a drain; end makes it end its first
// thread and returns once it has.
func sealedSession(t *testing.T, dir string) (pid int, end func()) {
	t.Helper()
	s := sessionFiles(t, dir)
	pid, in, out := startWorker(t, sealedEnding, "controller", s)
	writeFile(t, filepath.Join(s, "controller.pid"), fmt.Sprintf("%d\n", pid))
	status := fmt.Sprintf(`{"state": "stopped", "sealed": true, "controller_pid": %d}`+"\n", pid)
	if err := fsx.WriteFile(filepath.Join(s, "status.json"), []byte(status), true); err != nil {
		t.Fatal(err)
	}
	return pid, func() {
		t.Helper()
		if _, err := in.Write([]byte{'e'}); err != nil {
			t.Fatal(err)
		}
		if line, _ := out.ReadString('\n'); line != "ended\n" {
			t.Fatalf("the controller said %q", line)
		}
		if p, _ := controller.SealedController(s, s); p != 0 {
			t.Fatalf("pid %d is still recognised as a sealed controller: the case is not made", pid)
		}
	}
}

// Regression (TestCrashConvergence in CI): the removal's rename ends a
// sealed controller, and the recheck after it found the controller
// exiting, its argv gone with its first thread, still holding its log.
// Not recognised, it kept the directory (in_use) and the archive
// retried. The controller the proof saw sealed is known at the recheck
// by its pid and start time.
func TestRemovalIgnoresASealedControllerEndingAfterTheRename(t *testing.T) {
	var end func()
	dir, tg, h, ev, held := provenNow(t, func(dir string) { _, end = sealedSession(t, dir) })
	end()
	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantResult(t, r, Remove, Removed, "")
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory after its removal: %v", err)
	}
}

// The process at a sealed controller's pid is that controller only while
// it started when the proof saw it start: another that took the pid
// since keeps the directory.
func TestRemovalKeepsADirectoryAProcessAtASealedControllersPidHolds(t *testing.T) {
	var pid int
	var end func()
	dir, tg, h, ev, held := provenNow(t, func(dir string) { pid, end = sealedSession(t, dir) })
	end()
	c, ok := ev.sealed[pid]
	if !ok {
		t.Fatalf("the proof did not see pid %d as a sealed controller: %+v", pid, ev.sealed)
	}
	c.start++ // as a process that took its pid would have started
	ev.sealed[pid] = c
	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantResult(t, r, Fail, Failed, InUse)
	if _, err := os.Lstat(filepath.Join(dir, ".kandev", "sessions", "s-1", "controller.log")); err != nil {
		t.Fatalf("the directory did not get its name back: %v", err)
	}
}
