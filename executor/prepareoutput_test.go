package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The prepare script's lines reach the launch while the script still
// runs; the task directory's log keeps them all, which PrepareLog
// prints.
func TestPrepareOutputStreamsAndIsKept(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "go-on")
	profile := fmt.Sprintf("name: chatty\nhost: prod\nworkdir_root: %s\nshell: sh\n"+
		"prepare_script: |\n  echo first\n  while [ ! -e %s ]; do sleep 0.05; done\n  echo second >&2\n", f.root, gate)
	if _, err := f.exec.ApplyProfile(ctx, "chatty.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	output := func(l string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, l)
	}
	launched := make(chan error, 1)
	var sessionID string
	go func() {
		_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "chatty", Command: []string{"true"}, Output: output})
		if s != nil {
			sessionID = s.ID
		}
		launched <- err
	}()
	// The first line arrives while the script waits for the gate.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(lines)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no output while the prepare script ran")
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-launched; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "|"); got != "first|second" {
		t.Fatalf("lines %q", lines)
	}
	var log strings.Builder
	if err := f.exec.PrepareLog(ctx, sessionID, &log); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); got != strings.Join(lines, "\n")+"\n" {
		t.Fatalf("prepare log %q, lines %q", got, lines)
	}
}
