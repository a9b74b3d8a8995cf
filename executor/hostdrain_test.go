package executor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/records"
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
	for _, en := range entries {
		if en.Kind == records.KindHost {
			types = append(types, en.Type)
		}
	}
	last := entries[len(entries)-1]
	d2 := records.DetailOf(last)
	if last.Type != "host.drain_complete" || d2.Step != records.StepHostDrain || d2.Outcome != "complete" || d2.Phase != "cordoned" ||
		!strings.Contains(d2.Message, "all sessions on host box have stopped") {
		t.Fatalf("last entry %s %+v; host events %q", last.Type, d2, types)
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
	l, err := e.lockDrain(ctx, "box", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := e.BeginHostDrain(ctx, "box", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}
	_, err = e.RunHostDrain(ctx, "box", nil)
	var le *fsx.LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID == 0 {
		t.Fatalf("second worker: %v", err)
	}
	if holder, err := e.DrainWorker("box"); err != nil || holder == nil {
		t.Fatalf("DrainWorker while held: %v %v", holder, err)
	}
	if h := hostRecord(t, e); h.Drain.State != records.DrainRunning {
		t.Fatalf("the refused worker changed the drain: %+v", h.Drain)
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
