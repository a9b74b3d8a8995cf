package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing agent program stops Start before anything is detached; the
// lookup runs in the task dir, as the agent would.
func TestStartRequiresTheAgentProgram(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "spawned")
	swapRunCommand(t, "touch "+marker)
	req := newRequest(t, "no-such-agent-xyz --flag")
	req.Require = "no-such-agent-xyz"
	_, err := Start(req)
	if err == nil || !strings.Contains(err.Error(), `agent command "no-such-agent-xyz" not found: sh -l in `+req.TaskDir) {
		t.Fatalf("Start: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a controller was started for a missing agent")
	}

	if req.Require = "sh"; req.checkRequire() != nil {
		t.Fatalf("sh is not found: %v", req.checkRequire())
	}
	if err := os.WriteFile(filepath.Join(req.TaskDir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if req.Require = "./run.sh"; req.checkRequire() != nil {
		t.Fatal("a script in the task dir is not found")
	}
	if req.Shell = "no-such-shell"; req.checkRequire() == nil || !strings.Contains(req.checkRequire().Error(), "look up agent command") {
		t.Fatalf("missing shell: %v", req.checkRequire())
	}
}
