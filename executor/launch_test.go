package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/state"
)

// launchFixture is a trusted host on a real sshd with a profile whose
// primary repository is a local bare one, and the real helper binary.
type launchFixture struct {
	srv   *sshtest.Server
	cfg   Config
	exec  *Executor
	root  string
	state string
	bare  string // the profile's primary repository
}

func newLaunchFixture(t *testing.T, opts ...sshtest.Option) *launchFixture {
	t.Helper()
	helpertest.UseHelper(t, &locateHelpers, helpertest.Build(t))
	t.Setenv("SSH_AUTH_SOCK", "")
	srv := sshtest.NewServer(t, opts...)
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(sshConfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &launchFixture{srv: srv, root: filepath.Join(t.TempDir(), "root"), state: t.TempDir()}
	f.cfg = Config{SSHConfig: sshConfig}
	f.exec = f.open(t)
	ctx := context.Background()
	if _, _, err := f.exec.AddHost(ctx, AddHostOptions{Name: "prod", HostName: "127.0.0.1", Port: srv.Port(), User: srv.User(),
		IdentityFiles: []string{srv.UserKeyPath}, IdentitiesOnly: true, WorkdirRoot: f.root}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.TrustHost(ctx, TrustOptions{Name: "prod", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	f.bare, _ = helpertest.GitRepo(t)
	f.useRoot(t, f.root)
	return f
}

// useRoot (re)applies the profile "web" with root as its workdir_root.
func (f *launchFixture) useRoot(t *testing.T, root string) {
	t.Helper()
	profile := fmt.Sprintf("name: web\nhost: prod\nworkdir_root: %s\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n", root, f.bare)
	if _, err := f.exec.ApplyProfile(context.Background(), "web.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
}

// open is another kandev-exec process on the same state dir.
func (f *launchFixture) open(t *testing.T) *Executor {
	t.Helper()
	st, err := state.Open(f.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := f.cfg
	cfg.Store, cfg.StateDir = st, f.state
	return New(cfg)
}

func (f *launchFixture) setHostStatus(t *testing.T, status records.HostStatus) {
	t.Helper()
	ctx := context.Background()
	h, rec, err := f.exec.getHost(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	h.Status, h.StatusReason = status, "maintenance"
	data, _ := json.Marshal(h)
	if _, err := f.exec.cfg.Store.Update(ctx, records.KindHost, "prod", rec.Revision, data, state.Event{Type: "host." + string(status)}); err != nil {
		t.Fatal(err)
	}
}

// A host that is not admitted refuses launches (exit 9, cmdutil's table), before any
// record is written or the host is dialled.
func TestLaunchRefusedUnlessAdmitted(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	for status, next := range map[records.HostStatus]string{records.HostCordoned: "host uncordon prod", records.HostQuarantined: "host readmit prod", records.HostDraining: "host uncordon prod"} {
		f.setHostStatus(t, status)
		mark := len(f.srv.Log())
		_, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		var re *RefusedError
		if !errors.As(err, &re) || re.Status != status {
			t.Fatalf("%s: got %v", status, err)
		}
		if !strings.Contains(err.Error(), next) || !strings.Contains(err.Error(), "maintenance") {
			t.Fatalf("%s: message %q", status, err)
		}
		if log := f.srv.Log()[mark:]; strings.Contains(log, "Connection from") {
			t.Fatalf("%s: the host was dialled:\n%s", status, log)
		}
	}
	if ts, err := f.exec.ListTasks(ctx, ""); err != nil || len(ts) != 0 {
		t.Fatalf("tasks after refusals: %v, %v", ts, err)
	}
	if _, err := os.Stat(f.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workdir root touched: %v", err)
	}
}

// Twelve launches at once on one host, each its own process as far as the
// store and the helper lock go: twelve task dirs and sessions, one helper
// upload, and a store that reads back whole.
func TestTwelveParallelLaunches(t *testing.T) {
	f := newLaunchFixture(t)
	const n = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		uploads int
		tasks   = map[string]*records.Task{}
		errs    []error
	)
	for i := 0; i < n; i++ {
		e := f.open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			uploaded := false
			progress := func(step string) {
				// Byte counts follow the step: "Uploading helper (1.2 of 2.9 MB)".
				mu.Lock()
				defer mu.Unlock()
				if strings.HasPrefix(step, StepUploading+" (") && !uploaded {
					uploaded = true
					uploads++
				}
			}
			task, s, err := e.Launch(context.Background(), LaunchOptions{Profile: "web", Name: fmt.Sprint("p", i),
				Command: []string{"sh", "-c", "echo hello from $KANDEV_SESSION_ID"}, Progress: progress})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if s.State != records.SessionRunning {
				errs = append(errs, fmt.Errorf("task %s: session %s is %s", task.ID, s.ID, s.State))
			}
			tasks[task.ID] = task
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d launches failed: %v", len(errs), errors.Join(errs...))
	}
	if uploads != 1 {
		t.Fatalf("%d helper uploads, want 1", uploads)
	}
	dirs := map[string]bool{}
	for _, task := range tasks {
		if task.Phase != records.PhaseReady || len(task.Sessions) != 1 || dirs[task.TaskDir] {
			t.Fatalf("task %+v", task)
		}
		dirs[task.TaskDir] = true
		if _, err := os.Stat(filepath.Join(task.TaskDir, ".kandev", "sessions", task.Sessions[0], "controller.pid")); err != nil {
			t.Fatal(err)
		}
	}
	if len(tasks) != n {
		t.Fatalf("%d distinct tasks, want %d", len(tasks), n)
	}
	bins, _ := filepath.Glob(filepath.Join(f.root, "bin", "*", "*"))
	hidden, _ := filepath.Glob(filepath.Join(f.root, "bin", "*", ".*"))
	if len(bins) != 1 || len(hidden) != 0 {
		t.Fatalf("helper dir holds %v and %v, want one binary", bins, hidden)
	}
	checkStore(t, f.exec.cfg.Store, n)
}

// checkStore reads every record back and the journal from the start.
func checkStore(t *testing.T, st state.Store, n int) {
	t.Helper()
	ctx := context.Background()
	ts, _, err := records.List[records.Task](ctx, st, records.KindTask)
	if err != nil || len(ts) != n {
		t.Fatalf("tasks: %d, %v", len(ts), err)
	}
	ss, _, err := records.List[records.Session](ctx, st, records.KindSession)
	if err != nil || len(ss) != n {
		t.Fatalf("sessions: %d, %v", len(ss), err)
	}
	for _, s := range ss {
		if s.State != records.SessionRunning && s.State != records.SessionExited {
			t.Fatalf("session %s is %s", s.ID, s.State)
		}
	}
	entries, err := st.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, en := range entries {
		if en.Seq != uint64(i+1) {
			t.Fatalf("journal entry %d has seq %d", i, en.Seq)
		}
	}
}

// A warm launch (the helper cached on the host) and a resume each make
// one connection and run one command over one channel: the bootstrap
// checks the host and the helper's path and execs the helper, which
// serves every step there, streaming progress back. Counted, that is the
// SSH handshake, one round trip to open the channel and two answers
// waited for: prepare (sent with the command), and controller-start,
// sent once the records say a controller may exist. Nine round trips in
// all; sshd's log counts the requests.
func TestWarmLaunchIsOneCommand(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLogLevel("DEBUG1"))
	ctx := context.Background()
	// Connections, channels of any kind, and commands since mark.
	asked := func(mark int) [3]int {
		log := f.srv.Log()[mark:]
		return [3]int{strings.Count(log, "Connection from"), strings.Count(log, "server_input_channel_open: ctype"),
			strings.Count(log, "Starting session: command")}
	}
	var steps []string
	progress := func(s string) { steps = append(steps, s) }
	if _, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, StepUploading) }) {
		t.Fatalf("the first launch did not upload the helper: %q", steps)
	}

	steps, mark := nil, len(f.srv.Log())
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "60"}, Progress: progress})
	if err != nil || s.State != records.SessionRunning {
		t.Fatalf("warm launch: %+v, %v", s, err)
	}
	want := []string{StepConnecting, StepDetecting, StepHelperCached, StepPreparing, StepStarting, StepConnectingCtrl}
	if !slices.Equal(steps, want) {
		t.Fatalf("warm launch steps %q, want %q", steps, want)
	}
	if got := asked(mark); got != [3]int{1, 1, 1} {
		t.Fatalf("warm launch: %d connections, %d channels, %d commands; want one of each\n%s", got[0], got[1], got[2], f.srv.Log()[mark:])
	}

	if _, err := f.exec.StopSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	steps, mark = nil, len(f.srv.Log())
	if _, s, err = f.exec.Resume(ctx, task.ID, []string{"true"}, Reports{Progress: progress}); err != nil || s.State != records.SessionRunning {
		t.Fatalf("resume: %+v, %v", s, err)
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("resume steps %q, want %q", steps, want)
	}
	if got := asked(mark); got != [3]int{1, 1, 1} {
		t.Fatalf("resume: %d connections, %d channels, %d commands; want one of each\n%s", got[0], got[1], got[2], f.srv.Log()[mark:])
	}
}
