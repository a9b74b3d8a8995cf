package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

func openTest(t *testing.T, dir string, opts Options) *FileStore {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProcessesConcurrentIncrements(t *testing.T) {
	const procs, each = 8, 25
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, testKind, "counter", json.RawMessage(`{"n":0}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	var hs []*helper
	for range procs {
		hs = append(hs, startHelper(t, "increment", dir, strconv.Itoa(each)))
	}
	for _, h := range hs {
		if err := h.wait(); err != nil {
			t.Fatalf("helper %d: %v", h.cmd.Process.Pid, err)
		}
	}
	r, err := s.Get(ctx, testKind, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Data) != `{"n":200}` || r.Revision != procs*each+1 {
		t.Fatalf("counter %s at revision %d, want n=%d at revision %d", r.Data, r.Revision, procs*each, procs*each+1)
	}
	es, err := s.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, es, procs*each+1)
}

// checkSeqs: exactly n entries numbered 1..n.
func checkSeqs(t *testing.T, es []Entry, n int) {
	t.Helper()
	if len(es) != n {
		t.Fatalf("journal has %d entries, want %d", len(es), n)
	}
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("journal entry %d has seq %d", i, e.Seq)
		}
	}
}

// TestProcessKilledMidWrite: SIGKILL at a random point of a write loop
// never leaves a torn or half-applied record, nor a gap in the journal.
func TestProcessKilledMidWrite(t *testing.T) {
	dir := t.TempDir()
	for round := range 6 {
		h := startHelper(t, "writeloop", dir, "")
		h.line(t) // ready
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		h.kill(t)
		checkAfterCrash(t, dir, round)
	}
	// Writes carry on from where the killed process stopped.
	s := openTest(t, dir, Options{})
	before, _ := s.Journal(context.Background(), 0)
	if _, err := increment(context.Background(), s, "r1"); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Journal(context.Background(), 0)
	checkSeqs(t, after, len(before)+1)
}

func checkAfterCrash(t *testing.T, dir string, round int) {
	t.Helper()
	ctx := context.Background()
	s := openTest(t, dir, Options{})
	recs, err := s.List(ctx, testKind)
	if err != nil {
		t.Fatalf("round %d: List: %v", round, err)
	}
	es, err := s.Journal(ctx, 0)
	if err != nil {
		t.Fatalf("round %d: Journal: %v", round, err)
	}
	checkSeqs(t, es, len(es))
	// Every complete journal line parses; at most a trailing partial one.
	raw, err := os.ReadFile(s.path(journalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(raw, []byte("\n"))
	if lines != len(es) {
		t.Fatalf("round %d: journal has %d lines but %d entries", round, lines, len(es))
	}
	lastRev := map[string]uint64{}
	for _, e := range es {
		lastRev[e.Name] = e.Revision
	}
	lagging := 0
	for _, r := range recs {
		var v struct{ Rev uint64 }
		if err := json.Unmarshal(r.Data, &v); err != nil || v.Rev != r.Revision {
			t.Fatalf("round %d: record %s at revision %d holds %.40s (half-applied?)", round, r.Name, r.Revision, r.Data)
		}
		// The journal is written after the record, so it may lag by the
		// one write a crash interrupted, never lead.
		switch lastRev[r.Name] {
		case r.Revision:
		case r.Revision - 1:
			lagging++
		default:
			t.Fatalf("round %d: record %s at revision %d, journal says %d", round, r.Name, r.Revision, lastRev[r.Name])
		}
	}
	if lagging > round+1 {
		t.Fatalf("round %d: %d records ahead of the journal", round, lagging)
	}
}

func TestLockTimeoutNamesHolder(t *testing.T) {
	t.Run("Open", func(t *testing.T) {
		dir := t.TempDir()
		h := startHelper(t, "holdlock", dir, "")
		h.line(t)
		_, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
		checkLocked(t, err, h.cmd.Process.Pid, 200*time.Millisecond)
		h.kill(t) // the kernel drops a dead holder's lock
		openTest(t, dir, Options{LockTimeout: 200 * time.Millisecond})
	})
	t.Run("Update", func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		s := openTest(t, dir, Options{LockTimeout: 300 * time.Millisecond})
		r, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"})
		if err != nil {
			t.Fatal(err)
		}
		h := startHelper(t, "holdlock", dir, "")
		h.line(t)
		_, err = s.Update(ctx, testKind, "a", r.Revision, json.RawMessage(`{"v":2}`), Event{Type: "widget.changed"})
		checkLocked(t, err, h.cmd.Process.Pid, 300*time.Millisecond)

		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err = s.Update(cctx, testKind, "a", r.Revision, json.RawMessage(`{"v":2}`), Event{Type: "widget.changed"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Update with a cancelled context: %v", err)
		}
		// Reads never wait for the lock.
		if _, err := s.Get(ctx, testKind, "a"); err != nil {
			t.Fatal(err)
		}
		if err := h.wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, testKind, "a", r.Revision, json.RawMessage(`{"v":2}`), Event{Type: "widget.changed"}); err != nil {
			t.Fatalf("Update after the holder let go: %v", err)
		}
	})
}

func checkLocked(t *testing.T, err error, pid int, bound time.Duration) {
	t.Helper()
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want *LockedError", err)
	}
	if le.Holder == nil || le.Holder.PID != pid || le.Holder.Command == "" || le.Waited < bound {
		t.Fatalf("LockedError %+v (holder %+v), want holder pid %d after %s", le, le.Holder, pid, bound)
	}
	if !bytes.Contains([]byte(le.Error()), []byte("pid "+strconv.Itoa(pid))) {
		t.Fatalf("message %q does not name pid %d", le.Error(), pid)
	}
}

func createJob(t *testing.T, s *FileStore) Record {
	t.Helper()
	r, err := s.Create(context.Background(), testKind, "job", json.RawMessage(`{}`), Event{Type: "widget.added"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClaimOfDeadHolderTakenOver(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	createJob(t, s)
	h := startHelper(t, "claim", dir, "")
	oldID := h.line(t)
	if err := h.wait(); err != nil {
		t.Fatal(err)
	}
	c, err := s.AcquireClaim(context.Background(), testKind, "job", time.Minute)
	if err != nil {
		t.Fatalf("claim of exited pid %d not taken over: %v", h.cmd.Process.Pid, err)
	}
	if c.ID == oldID {
		t.Fatal("takeover reused the dead holder's claim id")
	}
	es, _ := s.Journal(context.Background(), 0)
	var d claimDetail
	if err := json.Unmarshal(es[len(es)-1].Detail, &d); err != nil || d.Replaced != oldID || d.ClaimID != c.ID {
		t.Fatalf("takeover journaled as %s", es[len(es)-1].Detail)
	}
}

func TestClaimOfLiveHolderRefused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, dir, Options{})
	r := createJob(t, s)
	h := startHelper(t, "claim", dir, "hold")
	h.line(t)
	pid := h.cmd.Process.Pid
	_, err := s.AcquireClaim(ctx, testKind, "job", time.Minute)
	var ce *ClaimedError
	if !errors.As(err, &ce) || ce.Holder.PID != pid {
		t.Fatalf("AcquireClaim while pid %d holds it: %v", pid, err)
	}
	_, err = s.Update(ctx, testKind, "job", r.Revision, json.RawMessage(`{"v":2}`), Event{Type: "widget.changed"})
	if !errors.As(err, &ce) {
		t.Fatalf("Update while pid %d holds the claim: %v", pid, err)
	}
	h.kill(t)
	if _, err := s.AcquireClaim(ctx, testKind, "job", time.Minute); err != nil {
		t.Fatalf("claim of killed pid %d not taken over: %v", pid, err)
	}
}

// TestExpiredClaimOfLiveHolderTakenOver: expiry alone frees a claim, even
// while its holder runs; the holder's late checkpoint is then stale.
func TestExpiredClaimOfLiveHolderTakenOver(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, dir, Options{})
	r := createJob(t, s)
	h := startHelper(t, "claim", dir, "hold")
	h.line(t)
	later := openTest(t, dir, Options{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	c, err := later.AcquireClaim(ctx, testKind, "job", time.Minute)
	if err != nil {
		t.Fatalf("expired claim of live pid %d not taken over: %v", h.cmd.Process.Pid, err)
	}
	if _, _, err := later.Checkpoint(ctx, c, 1, r.Revision, json.RawMessage(`{"v":2}`), Event{Type: "widget.phase"}); err != nil {
		t.Fatal(err)
	}
}

// TestLockSerialisesGoroutines: separate descriptors in one process
// exclude each other, so the in-process lock needs no extra mutex.
func TestLockSerialisesGoroutines(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	var mu sync.Mutex
	inside := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				l, err := s.lock(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				if inside != 1 {
					t.Errorf("%d holders at once", inside)
				}
				mu.Unlock()
				mu.Lock()
				inside--
				mu.Unlock()
				l.unlock()
			}
		})
	}
	wg.Wait()
}
