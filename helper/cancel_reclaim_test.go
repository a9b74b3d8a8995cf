package helper

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Ctrl-C during reclaim --apply used to stop only the CLI: the helper
// went on proving and removing until the call's time ran out. A cancel
// now stops an apply between directories, as its time running out does:
// the directory already renamed to its trash name gets its name back,
// the one whose proof it cut short and the one never reached are kept,
// each failed as cancelled, and the answer still comes.
func TestServeCancelStopsAReclaimApply(t *testing.T) {
	root := filepath.Join(physicalTemp(t), "kandev")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	bare, _ := helpertest.GitRepo(t)
	asked, stall := stallServer(t)
	send, inW, answers, served := converse(t)
	defer inW.Close()
	// renamed is proven and renamed first; stalled's proof waits on an
	// upstream that never answers; unreached waits its turn behind it.
	dirs := []string{"renamed", "stalled", "unreached"}
	var targets []reclaim.Target
	for _, d := range dirs {
		send(protocol.OpPrepare, taskdir.PrepareRequest{Root: root, TaskDir: d, TaskBranch: "kandev/" + d,
			Owner:        taskdir.Owner{InstallationID: "inst-1", TaskID: d, OperationID: "op-" + d},
			Repositories: []taskdir.Repository{{Name: "app", URL: bare}}})
		var res taskdir.PrepareResult
		if err := answers.Next(&res, nil); err != nil {
			t.Fatalf("prepare %s: %v", d, err)
		}
		targets = append(targets, reclaim.Target{Root: root, Dir: d, InstallationID: "inst-1", TaskID: d, Enabled: true})
	}
	tasks := filepath.Join(root, "tasks")
	if out, err := exec.Command("git", "-C", filepath.Join(tasks, "stalled"), "remote", "set-url", "origin", stall).CombinedOutput(); err != nil {
		t.Fatalf("set-url: %v\n%s", err, out)
	}
	// One directory at a time, in order: the first is renamed before the
	// second's proof starts, and stays renamed while that proof waits.
	send(protocol.OpReclaimApply, reclaim.Request{Targets: targets, Parallelism: 1, ProbeTimeoutSeconds: 30})
	select {
	case <-asked:
	case <-time.After(2 * time.Minute):
		t.Fatal("the stalled directory's proof never asked its upstream")
	}
	if _, err := os.Lstat(filepath.Join(tasks, ".reclaim.renamed")); err != nil {
		t.Fatalf("the first directory is not under its trash name while the second is proven: %v", err)
	}
	send(protocol.OpCancel, nil)
	var rep reclaim.Report
	if err := answers.Next(&rep, nil); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(dirs) {
		t.Fatalf("%d results for %d directories: %+v", len(rep.Results), len(dirs), rep.Results)
	}
	// What each was cut short before: its removal, or its proof.
	before := map[string]string{"renamed": "removed", "stalled": "proven", "unreached": "proven"}
	for i, d := range dirs {
		r := rep.Results[i]
		want := fmt.Sprintf("the call was interrupted before %s was %s", filepath.Join(tasks, d), before[d])
		if r.Outcome != reclaim.Failed || r.Reason != reclaim.Cancelled || r.Detail != want {
			t.Errorf("%s: %s %s (%s), want failed cancelled (%s)", d, r.Outcome, r.Reason, r.Detail, want)
		}
		if _, err := os.Stat(filepath.Join(tasks, d, ".kandev", "owner.json")); err != nil {
			t.Errorf("%s was not kept whole under its name: %v", d, err)
		}
		if _, err := os.Lstat(filepath.Join(tasks, ".reclaim."+d)); err == nil {
			t.Errorf("%s is left under its trash name", d)
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// stallServer is an HTTP upstream that never answers: asked is closed
// once a request came, and url is its address.
func stallServer(t *testing.T) (asked chan struct{}, url string) {
	asked, release := make(chan struct{}), make(chan struct{})
	first := make(chan struct{}, 1)
	first <- struct{}{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-first:
			close(asked)
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handlers
	return asked, srv.URL + "/app.git"
}

func physicalTemp(t *testing.T) string {
	t.Helper()
	p, err := fsx.Physical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
