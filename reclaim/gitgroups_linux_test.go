package reclaim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// A process is the proof's own while a command started through the
// call's gitGroups runs, and so is one that command started in its
// group; a process of another group is not, nor is any once the command
// ended.
func TestProofsOwnProcesses(t *testing.T) {
	var g gitGroups
	ctx, cancel := context.WithCancel(t.Context())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := taskdir.GroupCommand(ctx, t.TempDir(), "sh", "-c", `sleep 300 & echo $$ $!; wait`)
	cmd.Stdout = w
	ran := make(chan error, 1)
	go func() { ran <- g.run(cmd) }()
	defer w.Close()
	var leader, child int
	if _, err := fmt.Fscan(bufio.NewReader(r), &leader, &child); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	for _, c := range []struct {
		what string
		pid  int
		want bool
	}{{"the command", leader, true}, {"what it started", child, true}, {"another group", other.Process.Pid, false}, {"this process", os.Getpid(), false}} {
		if got := g.own(c.pid); got != c.want {
			t.Errorf("%s (pid %d): own %v, want %v", c.what, c.pid, got, c.want)
		}
	}
	cancel()
	<-ran
	if g.own(leader) {
		t.Errorf("pid %d is still the proof's own once its command ended", leader)
	}
}
