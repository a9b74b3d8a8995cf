package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/internal/tmuxtest"
)

// The CLI's `watch` in a real terminal (tmux) while other kandev-exec
// processes quarantine the host and archive its running task over SSH:
// the rows follow, and SIGTERM and SIGHUP each end the view with the
// documented exit status and the terminal as it was.
func TestWatchInATerminalFollowsOtherProcesses(t *testing.T) {
	bin := buildCLI(t)
	rig := newCrashRig(t, bin, sshtest.NewServer(t), gitOrigin(t))
	id, _ := rig.launch("sleep", "300")

	p := tmuxtest.New(t)
	before := p.Stty()
	watch := func() int {
		t.Helper()
		p.Run(fmt.Sprintf("env HOME=%s KANDEV_EXEC_STATE_DIR=%s KANDEV_EXEC_SSH_CONFIG=%s %s watch",
			rig.work, filepath.Join(rig.work, "state"), filepath.Join(rig.work, "ssh_config"), bin))
		p.WaitFor("the live view", func(s string) bool { return strings.Contains(s, "live seq") })
		return p.Foreground(bin)
	}
	pid := watch()
	p.WaitFor("prod admitted and the task ready", func(s string) bool {
		return envColumn(s, id, 3) == "ready" && strings.Contains(tmuxtest.Row(s, "prod"), "admitted")
	})

	rig.ok("host", "quarantine", "prod", "--reason", "disk full")
	p.WaitFor("prod quarantined for its reason", func(s string) bool {
		r := tmuxtest.Row(s, "prod")
		return strings.Contains(r, "quarantined") && strings.Contains(r, "disk full")
	})
	// A teardown goes on on a quarantined host: the running session is
	// drained and the clean directory reclaimed, so the task ends absent.
	rig.ok("task", "archive", id, "--yes")
	if got := rig.phase(id); got != "absent" {
		t.Fatalf("after the archive: phase %q, want absent", got)
	}
	p.WaitFor("the task drained and absent", func(s string) bool {
		return envColumn(s, id, 3) == "absent" && envColumn(s, id, 4) == "drained"
	})

	for _, c := range []struct {
		sig  syscall.Signal
		says string
	}{
		{syscall.SIGTERM, "error: interrupted"},
		{syscall.SIGHUP, "error: interrupted: the terminal hung up"},
	} {
		if c.sig != syscall.SIGTERM {
			pid = watch()
		}
		if err := syscall.Kill(pid, c.sig); err != nil {
			t.Fatal(err)
		}
		// 130, interrupted: the status docs/contract.md gives scripts.
		code, s := p.Exited()
		if code != 130 || !strings.Contains(s, c.says) {
			t.Fatalf("%s: exit %d, want 130 and %q on the screen:\n%s", c.sig, code, c.says, s)
		}
		// The alternate screen is gone: the shell's own screen is back,
		// with its prompt, and none of the view.
		if strings.Contains(s, "HOSTS") || !tmuxtest.AtPrompt(s) {
			t.Fatalf("%s: the view's screen is still up:\n%s", c.sig, s)
		}
		if after := p.Stty(); after != before {
			t.Fatalf("%s: the terminal settings changed:\nbefore %s\nafter  %s", c.sig, before, after)
		}
	}
}

// envColumn is column i of the task's row (3: PHASE, 4: DRAIN), "" without
// a row.
func envColumn(screen, id string, i int) string {
	if f := strings.Fields(strings.TrimPrefix(tmuxtest.Row(screen, id), ">")); len(f) > i {
		return f[i]
	}
	return ""
}
