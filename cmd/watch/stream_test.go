package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

var t0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

func tp(d time.Duration) *time.Time { v := t0.Add(d); return &v }

// syncBuffer is written by the stream and read by the test meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func openStore(t *testing.T) *state.FileStore {
	t.Helper()
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// put creates or replaces a record; a nil detail journals none, as
// entries written before details existed.
func put(t *testing.T, st state.Store, kind state.Kind, name string, v any, typ string, d *records.Detail) {
	t.Helper()
	ctx := context.Background()
	data, _ := json.Marshal(v)
	ev := state.Event{Type: typ}
	if d != nil {
		ev = records.Event(typ, *d)
	}
	rec, err := st.Get(ctx, kind, name)
	switch {
	case errors.Is(err, state.ErrNotFound):
		_, err = st.Create(ctx, kind, name, data, ev)
	case err == nil:
		_, err = st.Update(ctx, kind, name, rec.Revision, data, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// story writes a quarantine and an archive, with the kinds of entries a
// journal holds: with a detail, and without one (older writers).
func story(t *testing.T, st state.Store) {
	put(t, st, records.KindHost, "web-1", records.Host{Name: "web-1", Status: records.HostAdmitted}, "host.added", nil)
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2", Status: records.HostAdmitted}, "host.added", nil)
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2", Status: records.HostQuarantined, StatusReason: "disk full"},
		"host.quarantined", &records.Detail{Host: "web-2", Phase: "quarantined", Reason: "disk full", By: "alice", Until: tp(time.Hour)})
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseReady}, "task.created", nil)
	put(t, st, records.KindSession, "s1", records.Session{ID: "s1", TaskID: "t1", Host: "web-2", State: records.SessionRunning}, "session.started", nil)
	put(t, st, records.KindTask, "t9", records.Task{ID: "t9", Host: "web-1", Phase: records.PhaseReady}, "task.created", nil)
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseDraining}, "task.draining",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "draining", Step: records.StepDrain})
	put(t, st, records.KindSession, "s1", records.Session{ID: "s1", TaskID: "t1", Host: "web-2", State: records.SessionStopped}, "session.stopped",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "stopped", Receipt: "9f86d081884c"})
	put(t, st, records.KindJob, "t1", records.CleanupJob{ID: "t1", TaskID: "t1", Host: "web-2", State: records.JobRetryWait, Attempts: 1},
		"job.retry_wait", &records.Detail{Host: "web-2", TaskID: "t1", Phase: "retry_wait", Attempts: 1, NextAt: tp(time.Minute), Error: "cleanup script exited 1"})
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseArchived}, "task.archived",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "archived", Outcome: "drained"})
	put(t, st, records.KindTask, "t9", records.Task{ID: "t9", Host: "web-1", Phase: records.PhaseDraining}, "task.draining",
		&records.Detail{Host: "web-1", TaskID: "t9", Phase: "draining"})
}

func streamOpts(st state.Store) (*WatchOptions, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errb}
	return &WatchOptions{IO: ios, Executor: func() (*executor.Executor, error) { return executor.New(executor.Config{Store: st}), nil },
		Since: -1, Poll: 10 * time.Millisecond}, out, errb
}

// --json prints one object per journal entry, each field what the
// journal says: checked line by line against the entries themselves.
func TestStreamJSONMatchesTheJournalLineByLine(t *testing.T) {
	st := openStore(t)
	story(t, st)
	o, out, _ := streamOpts(st)
	o.JSON, o.Since, o.Until = true, 0, "archived"
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	entries, err := st.Journal(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 10 { // through task.archived, the first "archived"
		t.Fatalf("%d lines, want 10:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		e := entries[i]
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i+1, err, l)
		}
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"at", "detail", "epoch", "host", "kind", "name", "phase", "seq", "task_id", "type"}; !slices.Equal(keys, want) {
			t.Fatalf("line %d fields %v, want %v", i+1, keys, want)
		}
		var d struct {
			Host   string `json:"host"`
			TaskID string `json:"task_id"`
			Phase  string `json:"phase"`
		}
		_ = json.Unmarshal(e.Detail, &d)
		host, task := d.Host, d.TaskID
		if host == "" && e.Kind == records.KindHost {
			host = e.Name
		}
		if task == "" && (e.Kind == records.KindTask || e.Kind == records.KindJob) {
			task = e.Name
		}
		detail := string(e.Detail)
		if detail == "" {
			detail = "{}"
		}
		at, _ := json.Marshal(e.At.UTC())
		want := map[string]string{"epoch": jsonNum(e.Epoch), "seq": jsonNum(e.Seq), "at": string(at), "kind": jsonStr(string(e.Kind)),
			"name": jsonStr(e.Name), "type": jsonStr(e.Type), "host": jsonStr(host), "task_id": jsonStr(task),
			"phase": jsonStr(d.Phase), "detail": detail}
		for k, v := range want {
			if string(got[k]) != v {
				t.Errorf("line %d (seq %d) %s = %s, want %s", i+1, e.Seq, k, got[k], v)
			}
		}
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }
func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

// --no-tui prints one plain line per event: time, seq, type, record,
// then key=value; a host's text is escaped, quoted where it has spaces.
func TestPlainLines(t *testing.T) {
	at := t0.Add(-time.Minute)
	cases := []struct {
		e    state.Entry
		want string
	}{
		{state.Entry{Seq: 1, At: at, Kind: records.KindHost, Name: "web-1", Type: "host.added"},
			"2026-03-01T01:59:00Z seq=1 host.added host/web-1"},
		{state.Entry{Seq: 2, At: at, Kind: records.KindHost, Name: "web-2", Type: "host.quarantined",
			Detail: records.Event("", records.Detail{Host: "web-2", Phase: "quarantined", Reason: "disk full", By: "alice", Until: tp(time.Hour)}).Detail},
			`2026-03-01T01:59:00Z seq=2 host.quarantined host/web-2 phase=quarantined reason="disk full" by=alice until=2026-03-01T03:00:00Z`},
		{state.Entry{Seq: 3, At: at, Kind: records.KindSession, Name: "s1", Type: "session.stopped",
			Detail: records.Event("", records.Detail{Host: "web-2", TaskID: "t1", Phase: "stopped", Receipt: "9f86d081884c"}).Detail},
			"2026-03-01T01:59:00Z seq=3 session.stopped session/s1 host=web-2 task=t1 phase=stopped receipt=9f86d081884c"},
		{state.Entry{Seq: 4, At: at, Kind: records.KindJob, Name: "t1", Type: "job.retry_wait",
			Detail: records.Event("", records.Detail{Host: "web-2", TaskID: "t1", Phase: "retry_wait", Attempts: 2, NextAt: tp(5 * time.Minute), Error: "exit 1\x1b[2J"}).Detail},
			`2026-03-01T01:59:00Z seq=4 job.retry_wait job/t1 host=web-2 phase=retry_wait attempts=2 next_at=2026-03-01T02:05:00Z error="exit 1\x1b[2J"`},
		{state.Entry{Seq: 5, At: at, Kind: records.KindTask, Name: "t1", Type: "task.failed",
			Detail: records.Event("", records.Detail{Host: "web-2", TaskID: "t1", Error: "ok\rforged"}).Detail},
			`2026-03-01T01:59:00Z seq=5 task.failed task/t1 host=web-2 error=ok\rforged`},
	}
	for _, c := range cases {
		if got := PlainLine(c.e); got != c.want {
			t.Errorf("PlainLine(seq %d)\n got %s\nwant %s", c.e.Seq, got, c.want)
		}
	}
}

// A stream follows what is written after it starts, and stops at the
// awaited phase with no polling of `task show`.
func TestStreamFollowsLiveWritesUntilThePhase(t *testing.T) {
	st := openStore(t)
	put(t, st, records.KindHost, "web-2", records.Host{Name: "web-2"}, "host.added", nil)
	since, err := JournalEnd(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	o, out, _ := streamOpts(st)
	o.Task, o.Since, o.Until = "t1", since, "absent"
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseDraining}, "task.draining",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "draining"})
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), o) }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "task.draining") })
	put(t, st, records.KindHost, "web-3", records.Host{Name: "web-3"}, "host.added", nil) // out of scope
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseDestroying}, "task.destroying",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "destroying", Step: records.StepReclaim})
	put(t, st, records.KindTask, "t1", records.Task{ID: "t1", Host: "web-2", Phase: records.PhaseAbsent}, "task.absent",
		&records.Detail{Host: "web-2", TaskID: "t1", Phase: "absent"})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not stop at phase absent")
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		types = append(types, strings.Fields(l)[2])
	}
	if want := []string{"task.draining", "task.destroying", "task.absent"}; !slices.Equal(types, want) {
		t.Fatalf("printed %v, want %v:\n%s", types, want, out.String())
	}
}

// waitFor polls a condition the stream will make true.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// --host keeps the host's events, placing an entry without a detail (a
// session written by an older kandev-exec) by the record it names.
func TestStreamScopeToHost(t *testing.T) {
	st := openStore(t)
	story(t, st)
	o, out, _ := streamOpts(st)
	o.Host, o.Since, o.Until = "web-2", 0, "archived"
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		got = append(got, f[2]+" "+f[3])
	}
	want := []string{"host.added host/web-2", "host.quarantined host/web-2", "task.created task/t1", "session.started session/s1",
		"task.draining task/t1", "session.stopped session/s1", "job.retry_wait job/t1", "task.archived task/t1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// gappy hides sequence numbers, as a store that lost entries would.
type gappy struct {
	*state.FileStore
	hide map[uint64]bool
}

func (g *gappy) Journal(ctx context.Context, after uint64) ([]state.Entry, error) {
	es, err := g.FileStore.Journal(ctx, after)
	return slices.DeleteFunc(es, func(e state.Entry) bool { return g.hide[e.Seq] }), err
}

func (g *gappy) Follow(ctx context.Context, epoch, after uint64) ([]state.Entry, error) {
	es, err := g.FileStore.Follow(ctx, epoch, after)
	return slices.DeleteFunc(es, func(e state.Entry) bool { return g.hide[e.Seq] }), err
}

// A gap is said on stderr and the stream goes on after it; a re-created
// journal (new epoch) is said too, and followed from its start.
func TestStreamSaysGapsAndNewEpochs(t *testing.T) {
	fs := openStore(t)
	story(t, fs)
	g := &gappy{FileStore: fs, hide: map[uint64]bool{3: true, 4: true}}
	o, out, errb := streamOpts(g)
	o.Executor = func() (*executor.Executor, error) { return executor.New(executor.Config{Store: g}), nil }
	o.Since, o.Until = 0, "archived"
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "watch: the journal skips from seq 2 to 5: those events are lost\n") {
		t.Fatalf("stderr %q", errb.String())
	}
	if strings.Contains(out.String(), "seq=3 ") || !strings.Contains(out.String(), "seq=5 ") {
		t.Fatalf("stdout:\n%s", out.String())
	}

	o, out, errb = streamOpts(fs)
	o.Since = 0
	o.Stop = func(e state.Entry, _ records.Detail) bool { return e.Name == "web-7" }
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), o) }()
	// Once the old journal's last event is out, the stream follows it;
	// then the journal is re-created under it.
	waitFor(t, func() bool { return strings.Contains(out.String(), "seq=11 task.draining task/t9") })
	if err := os.Remove(filepath.Join(fs.Dir(), "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	put(t, fs, records.KindHost, "web-7", records.Host{Name: "web-7", Status: records.HostQuarantined}, "host.quarantined",
		&records.Detail{Host: "web-7", Phase: "quarantined"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "watch: the journal was re-created (epoch ") || !strings.Contains(out.String(), "seq=1 host.quarantined host/web-7") {
		t.Fatalf("stderr %q\nstdout %q", errb.String(), out.String())
	}
}

// Follow, as task archive --watch calls it without a terminal: the
// stream of what the command started, from before it started, until the
// awaited event.
func TestFollowStreamsWhatACommandStarted(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KANDEV_EXEC_STATE_DIR", dir)
	ios, _, out, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, "test")
	f.AddGlobalFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	defer f.Close()
	st, err := f.Store()
	if err != nil {
		t.Fatal(err)
	}
	story(t, st) // t1 is archived at seq 10; t9 drains at seq 11
	since := int64(6)
	err = Follow(context.Background(), f, records.Scope{Task: "t1"}, since, func(_ state.Entry, d records.Detail) bool {
		return d.Phase == "archived"
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		seqs = append(seqs, strings.Fields(l)[1])
	}
	if want := []string{"seq=7", "seq=8", "seq=9", "seq=10"}; !slices.Equal(seqs, want) {
		t.Fatalf("printed %v, want %v:\n%s", seqs, want, out.String())
	}
}

// Claim events are left out of the stream unless --claims keeps them:
// every verb writes a pair around its work.
func TestStreamLeavesOutClaimsUnlessAsked(t *testing.T) {
	st := openStore(t)
	story(t, st)
	ctx := context.Background()
	c, err := st.AcquireClaim(ctx, records.KindTask, "t9", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	put(t, st, records.KindTask, "t9", records.Task{ID: "t9", Host: "web-1", Phase: records.PhaseArchived}, "task.archived",
		&records.Detail{Host: "web-1", TaskID: "t9", Phase: "archived"})
	for _, claims := range []bool{false, true} {
		o, out, _ := streamOpts(st)
		o.Task, o.Since, o.Until, o.Claims = "t9", 0, "archived", claims
		if err := o.check(); err != nil {
			t.Fatal(err)
		}
		if err := Run(ctx, o); err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			types = append(types, strings.Fields(l)[2])
		}
		want := []string{"task.created", "task.draining", "task.archived"}
		if claims {
			want = []string{"task.created", "task.draining", "claim.acquired", "claim.released", "task.archived"}
		}
		if !slices.Equal(types, want) {
			t.Fatalf("--claims %v: printed %v, want %v:\n%s", claims, types, want, out.String())
		}
	}
}
