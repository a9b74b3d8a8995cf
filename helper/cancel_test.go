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

// A cancel stops, with the request it reaches, those of its operation
// sent behind it (a reclaim sends every root's listing at once): a
// listing queued behind the one interrupted used to be served in full,
// and remove, after the caller had stopped reading. They are answered as
// stopped at once; another operation behind them is served as sent.
func TestServeCancelStopsTheQueuedRequestsOfItsOperation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks", "t-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	started, queued := filepath.Join(tmp, "started"), filepath.Join(tmp, "queued")
	send, inW, answers, served := converse(t)
	send(protocol.OpRunScript, taskdir.RunScriptRequest{Dir: dir, Shell: "/bin/sh",
		Script: "touch " + started + "; while :; do sleep 1; done"})
	send(protocol.OpRunScript, taskdir.RunScriptRequest{Dir: dir, Shell: "/bin/sh", Script: "touch " + queued})
	send(protocol.OpVersion, nil)
	waitFile(t, started)
	send(protocol.OpCancel, nil)
	inW.Close()
	var res taskdir.RunScriptResult
	if err := answers.Next(&res, nil); err != nil || res.ExitCode != 128+9 {
		t.Fatalf("cancelled script: %+v, %v", res, err)
	}
	res = taskdir.RunScriptResult{}
	err := answers.Next(&res, nil)
	if _, serr := os.Stat(queued); serr == nil {
		t.Errorf("the script queued behind the cancelled one ran (answer %+v, %v)", res, err)
	}
	var v protocol.VersionInfo
	if err := answers.Next(&v, nil); err != nil || v.Protocol != protocol.Protocol() {
		t.Fatalf("version after the cancel: %+v, %v", v, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
