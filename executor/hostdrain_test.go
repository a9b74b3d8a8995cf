package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// A drain with nothing running ends at once: complete, the host cordoned
// (a quarantined one stays quarantined), each step on the host record.
func TestDrainWithNothingRunningEndsCordoned(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	if _, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	if h := hostRecord(t, e); h.Status != records.HostDraining || h.Drain.State != records.DrainRunning {
		t.Fatalf("after begin: %s %+v", h.Status, h.Drain)
	}
	var said []string
	d, err := e.RunHostDrain(ctx, "box", func(s string) { said = append(said, s) })
	if err != nil {
		t.Fatal(err)
	}
	h := hostRecord(t, e)
	if d.State != records.DrainComplete || h.Status != records.HostCordoned || h.Drain.EndedAt == nil {
		t.Fatalf("after run: %s %+v", h.Status, h.Drain)
	}
	if last := said[len(said)-1]; !strings.Contains(last, "all sessions on host box have stopped") {
		t.Fatalf("progress: %q", said)
	}
	// The journal alone tells a live view what happened.
	entries, err := e.cfg.Store.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var last state.Entry
	for _, en := range entries {
		if en.Kind == records.KindHost {
			types, last = append(types, en.Type), en
		}
	}
	d2 := records.DetailOf(last)
	if last.Type != "host.drain_complete" || d2.Step != records.StepHostDrain || d2.Outcome != "complete" || d2.Phase != "cordoned" ||
		!strings.Contains(d2.Message, "all sessions on host box have stopped") {
		t.Fatalf("last host entry %s %+v; host events %q", last.Type, d2, types)
	}
	if !slices.Contains(types, "host.draining") || !slices.Contains(types, "host.drain_step") {
		t.Fatalf("host events %q", types)
	}

	if _, err := e.QuarantineHost(ctx, "box", "disk", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RunHostDrain(ctx, "box", nil); err != nil {
		t.Fatal(err)
	}
	if h := hostRecord(t, e); h.Status != records.HostQuarantined || h.StatusReason != "disk" || h.Drain.State != records.DrainComplete {
		t.Fatalf("quarantined host after a drain: %s %q %+v", h.Status, h.StatusReason, h.Drain)
	}
}

// Uncordoning a host stops its drain at the next step; the host keeps
// taking launches.
func TestUncordonCancelsDrain(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	if _, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.UncordonHost(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	d, err := e.RunHostDrain(ctx, "box", nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := hostRecord(t, e); d.State != records.DrainCancelled || h.Status != records.HostAdmitted {
		t.Fatalf("%s %+v", h.Status, d)
	}
}

// One worker per host: a second one is refused, naming the first.
func TestOneDrainWorkerPerHost(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	held, err := e.claimDrain(ctx, "box", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	_, err = e.RunHostDrain(ctx, "box", nil)
	var claimed *state.ClaimedError
	if !errors.As(err, &claimed) || claimed.Holder.PID != os.Getpid() {
		t.Fatalf("second worker: %v", err)
	}
	if holder, err := e.DrainWorker(ctx, "box"); err != nil || holder == nil || holder.PID != os.Getpid() {
		t.Fatalf("DrainWorker while held: %v %v", holder, err)
	}
	if h := hostRecord(t, e); h.Drain.State != records.DrainRunning {
		t.Fatalf("the refused worker changed the drain: %+v", h.Drain)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if holder, err := e.DrainWorker(ctx, "box"); err != nil || holder != nil {
		t.Fatalf("DrainWorker once released: %v %v", holder, err)
	}
}

// Two machines on one etcd: the drain a worker holds on one is refused to
// the other, which names it; a worker that stops renewing (frozen, gone
// with its machine) loses it when its lease runs out, and the other then
// takes the drain over.
func TestOneDrainWorkerPerHostAcrossMachines(t *testing.T) {
	c := etcdtest.Start(t, 1)
	machine := func() *Executor {
		st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/drain"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return New(Config{Store: st, StateDir: t.TempDir(), ClaimTTL: 5 * time.Second})
	}
	a, b := machine(), machine()
	ctx := context.Background()
	if _, err := a.cfg.Store.Create(ctx, records.KindHost, "box", []byte(`{"name":"box","status":"admitted"}`), state.Event{Type: "host.added"}); err != nil {
		t.Fatal(err)
	}
	held, err := a.claimDrain(ctx, "box", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	_, err = b.RunHostDrain(ctx, "box", nil)
	var claimed *state.ClaimedError
	if !errors.As(err, &claimed) || claimed.Holder.Since != held.Claim().Holder.Since {
		t.Fatalf("the other machine's worker: %v", err)
	}
	if holder, err := b.DrainWorker(ctx, "box"); err != nil || holder == nil || holder.Since != held.Claim().Holder.Since {
		t.Fatalf("DrainWorker from the other machine: %v %v", holder, err)
	}
	// a never renews: once its lease is gone, b's worker runs the drain
	// (nothing runs on the host, so it completes).
	d, err := b.RunHostDrain(ctx, "box", nil)
	for i := 0; errors.As(err, &claimed) && i < 100; i++ {
		time.Sleep(100 * time.Millisecond) // polling for the lease's expiry, bounded
		d, err = b.RunHostDrain(ctx, "box", nil)
	}
	if err != nil || d == nil || d.State != records.DrainComplete {
		t.Fatalf("b's worker after a's lease expired: %+v, %v", d, err)
	}
	if err := held.Release(ctx); err == nil {
		t.Fatal("a released a claim it had lost")
	}
}

// Asking again while a drain runs keeps that drain (and where its lines
// start in the log) and takes the new deadline.
func TestBeginWhileRunningKeepsTheDrain(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	first, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 100)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(3 * time.Hour)
	second, err := e.BeginHostDrain(ctx, "box", later, "/log", 900)
	if err != nil {
		t.Fatal(err)
	}
	if second.LogOffset != 100 || !second.StartedAt.Equal(first.StartedAt) || !second.Deadline.Equal(later.UTC().Truncate(time.Second)) {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

// Regression: an operator on a shared store may have no state dir yet
// (nothing of theirs was written locally); a drain makes it for its log,
// where it used to fail with "mkdir .../logs: no such file or directory".
func TestDrainLogMakesTheStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bob")
	e := New(Config{StateDir: dir})
	log, err := e.DrainLog("box")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "logs", "drain-box.log"); log != want {
		t.Fatalf("drain log %s, want %s", log, want)
	}
	for _, d := range []string{dir, filepath.Dir(log)} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v", d, fi, err)
		}
	}
}
