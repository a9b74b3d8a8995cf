package cmd

import (
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/internal/tmuxtest"
)

// What is typed before the host's shell starts reaches it: `task shell`
// hands the terminal to the host and asks it nothing of its own, so no
// key is read and dropped on the way. TERM is a terminal's that answers
// queries (inside tmux a program would otherwise not ask).
func TestTaskShellKeepsTypeAhead(t *testing.T) {
	srv := sshtest.NewServer(t)
	rig := newCrashRig(t, buildCLI(t), srv, gitOrigin(t))
	id, _ := rig.launch("true")
	pane := tmuxtest.New(t)
	env := []string{"TERM=xterm-256color"}
	for _, kv := range rig.env {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KANDEV_EXEC_") || k == "HOME" || k == "SSH_AUTH_SOCK" || k == "NO_COLOR" {
			env = append(env, "'"+kv+"'")
		}
	}
	pane.Run("env " + strings.Join(env, " ") + " " + rig.bin + " task shell " + id)
	pane.Keys("echo typed-ahead-$((40+2)); exit 3", "Enter")
	code, screen := pane.Exited()
	if code != 3 || !strings.Contains(screen, "typed-ahead-42") {
		t.Fatalf("exit %d; the keys typed ahead did not reach the host's shell:\n%s", code, screen)
	}
}
