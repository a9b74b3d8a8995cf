package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/helpertest"
)

// A secret the profile hands the agent is masked in what the agent prints
// into the remote controller.log (and so in `logs`).
func TestAgentOutputRedactsSecretValues(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	const value = "agent-s3cr3t-value-42"
	if _, _, err := f.exec.Vault().SetSecret(ctx, "tok", []byte(value)); err != nil {
		t.Fatal(err)
	}
	bare, _ := helpertest.GitRepo(t)
	profile := "name: sec\nhost: prod\nworkdir_root: " + f.root + "\nshell: sh\nenv:\n  TOKEN: {secret: tok}\nrepositories:\n  - name: app\n    url: " + bare + "\n    branch: main\n"
	if _, err := f.exec.ApplyProfile(ctx, "sec.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "sec",
		Command: []string{"sh", "-c", `printf 'token=%s;\n' "$TOKEN" | dd bs=1 2>/dev/null`}})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(task.TaskDir, ".kandev", "sessions", s.ID, "controller.log")
	var log string
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(log, "agent exited") {
		if time.Now().After(deadline) {
			t.Fatalf("agent did not exit:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(logPath)
		log = string(b)
	}
	if strings.Contains(log, value) || !strings.Contains(log, "token=***;\n") {
		t.Fatalf("controller.log:\n%s", log)
	}
}
