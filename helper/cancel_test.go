package helper

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// A cancel that arrives while a run-script is served stops the script
// (its answer still comes, killed); one that arrives while something
// not cancellable runs, or while nothing runs, is passed over, and the
// requests sent behind it are served in their turn.
func TestServeCancel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks", "t-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	send, inW, answers, served := converse(t)
	send(protocol.OpCancel, nil) // nothing to stop: no answer
	// The cancel leaves once the script has started.
	send(protocol.OpRunScript, taskdir.RunScriptRequest{Dir: dir, Shell: "/bin/sh",
		Script: "touch " + started + "; while :; do sleep 1; done"})
	waitFile(t, started)
	send(protocol.OpCancel, nil)
	var res taskdir.RunScriptResult
	if err := answers.Next(&res, nil); err != nil || res.ExitCode != 128+9 || res.TimedOut {
		t.Fatalf("cancelled script: %+v, %v", res, err)
	}
	send(protocol.OpVersion, nil)
	inW.Close()
	var v protocol.VersionInfo
	if err := answers.Next(&v, nil); err != nil || v.Protocol != protocol.Protocol() {
		t.Fatalf("version after the cancel: %+v, %v", v, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// waitFile waits, bounded, for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}
