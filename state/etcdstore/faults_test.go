package etcdstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// attempt is one write a writer tried: its token is in the data and the
// journal entry of the write, if it landed.
type attempt struct {
	token string
	err   error
}

// TestLeaderKilledDuringWriters: 16 writers, each with its own client,
// increment one counter by compare-and-swap while the leader is killed
// (and restarted) three times. No increment is lost or applied twice, the
// journal has each landed write once and no gap, and every failed write
// ended with a documented exit code and left no trace.
func TestLeaderKilledDuringWriters(t *testing.T) {
	const writers, each, rounds = 16, 25, 3
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	const prefix = "/faults"
	setup := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix})
	if _, err := setup.Create(ctx, helperKind, "counter", json.RawMessage(`{"n":0}`), ev); err != nil {
		t.Fatal(err)
	}

	var landed atomic.Int64
	results := make([][]attempt, writers)
	var wg sync.WaitGroup
	for w := range writers {
		s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix, Timeout: 5 * time.Second})
		wg.Go(func() { results[w] = incrementLoop(ctx, s, w, each, &landed) })
	}
	for round := 1; round <= rounds; round++ {
		waitFor(t, func() bool { return landed.Load() >= int64(round*writers*each/(rounds+1)) })
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		leader, err := c.WaitLeader(lctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.Kill(leader)
		if err := c.Restart(leader); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()

	ok := map[string]bool{}
	failed := map[string]error{}
	for _, as := range results {
		for _, a := range as {
			if a.err == nil {
				ok[a.token] = true
				continue
			}
			failed[a.token] = a.err
			var ue *state.UnreachableError
			if errors.As(a.err, &ue) && ue.Unknown {
				t.Errorf("write %s: outcome left unknown: %v", a.token, a.err)
			}
			switch code := cmdutil.Classify(a.err).Exit; code {
			case cmdutil.ExitUnreachable.Status, cmdutil.ExitConflict.Status, cmdutil.ExitLocked.Status:
			default:
				t.Errorf("write %s failed with exit %d: %v", a.token, code, a.err)
			}
		}
	}
	if len(ok) != writers*each {
		t.Fatalf("%d increments landed, want %d", len(ok), writers*each)
	}
	r, err := setup.Get(ctx, helperKind, "counter")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ N int }
	json.Unmarshal(r.Data, &v)
	if v.N != len(ok) || r.Revision != uint64(len(ok)+1) {
		t.Fatalf("counter n=%d at revision %d after %d increments", v.N, r.Revision, len(ok))
	}
	es, err := setup.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("journal entry %d has seq %d", i, e.Seq)
		}
		var d struct{ Token string }
		json.Unmarshal(e.Detail, &d)
		seen[d.Token]++
	}
	for tok := range ok {
		if seen[tok] != 1 {
			t.Errorf("landed write %s is in the journal %d times", tok, seen[tok])
		}
	}
	for tok, err := range failed {
		if seen[tok] != 0 {
			t.Errorf("failed write %s (%v) is in the journal", tok, err)
		}
	}
	t.Logf("%d increments, %d failed attempts (%s)", len(ok), len(failed), summarize(failed))
}

// incrementLoop makes n increments of the counter, each attempt with its
// own token, re-reading after any failure.
func incrementLoop(ctx context.Context, s *etcdstore.Store, w, n int, landed *atomic.Int64) []attempt {
	var out []attempt
	for i, try := 0, 0; i < n; try++ {
		a := incrementOnce(ctx, s, fmt.Sprintf("w%d-%d", w, try))
		out = append(out, a)
		if a.err == nil {
			i++
			landed.Add(1)
		}
	}
	return out
}

func summarize(failed map[string]error) string {
	kinds := map[string]int{}
	for _, err := range failed {
		kinds[fmt.Sprintf("%T", errors.Unwrap(err))+"/"+fmt.Sprintf("%T", err)]++
	}
	var parts []string
	for k, n := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	return strings.Join(parts, ", ")
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStoreDownFailsNamingEndpoints: with the only member dead, every
// call returns a *state.UnreachableError naming the endpoint (exit 7)
// once the call's deadline passes, changes nothing, and a kept claim is
// reported lost.
func TestStoreDownFailsNamingEndpoints(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const timeout = time.Second
	cfg := etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/down", Timeout: timeout}
	s := openStore(t, cfg)
	r, err := s.Create(ctx, helperKind, "a", json.RawMessage(`{}`), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, helperKind, "held", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	held, err := s.AcquireClaim(ctx, helperKind, "held", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	keeper := state.KeepClaim(ctx, s, held)
	defer keeper.Stop()
	before, _ := s.Journal(ctx, 0)
	epoch, _ := s.Epoch(ctx)

	c.Kill(0)
	d := json.RawMessage(`{"v":2}`)
	calls := map[string]func() error{
		"Open":    func() error { _, err := etcdstore.Open(ctx, cfg); return err },
		"Get":     func() error { _, err := s.Get(ctx, helperKind, "a"); return err },
		"List":    func() error { _, err := s.List(ctx, helperKind); return err },
		"Create":  func() error { _, err := s.Create(ctx, helperKind, "b", d, ev); return err },
		"Update":  func() error { _, err := s.Update(ctx, helperKind, "a", r.Revision, d, ev); return err },
		"Delete":  func() error { return s.Delete(ctx, helperKind, "a", r.Revision, ev) },
		"Discard": func() error { return s.Discard(ctx, helperKind, "a", ev) },
		"Txn": func() error {
			return s.Txn(ctx, func(tx state.Tx) error { _, err := tx.Get(helperKind, "a"); return err })
		},
		"AcquireClaim": func() error { _, err := s.AcquireClaim(ctx, helperKind, "a", time.Minute); return err },
		"Checkpoint":   func() error { _, _, err := s.Checkpoint(ctx, held, 1, 1, d, ev); return err },
		"RenewClaim":   func() error { _, err := s.RenewClaim(ctx, held); return err },
		"ReleaseClaim": func() error { return s.ReleaseClaim(ctx, held) },
		"Journal":      func() error { _, err := s.Journal(ctx, 0); return err },
		"Epoch":        func() error { _, err := s.Epoch(ctx); return err },
		"Follow":       func() error { _, err := s.Follow(ctx, epoch, uint64(len(before))); return err },
		"Kinds":        func() error { _, err := s.Kinds(ctx); return err },
		"LiveClaims":   func() error { _, err := s.LiveClaims(ctx); return err },
		"ImportRecord": func() error { return s.ImportRecord(ctx, r) },
		"RemoveRecord": func() error { return s.RemoveRecord(ctx, helperKind, "a") },
	}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			done := make(chan error, 1)
			go func() { done <- call() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("%s: still waiting 30 s after the store went down (its deadline is %s)", name, timeout)
				return
			}
			var ue *state.UnreachableError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.Endpoints()[0]) || cmdutil.Classify(err).Exit != 7 {
				t.Errorf("%s with the store down: %v; want *UnreachableError naming %s (exit 7)", name, err, c.Endpoints()[0])
			}
		})
	}
	wg.Wait()
	select {
	case <-keeper.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the keeper did not report its claim lost with the store down")
	}
	var ue *state.UnreachableError
	if !errors.As(keeper.Err(), &ue) {
		t.Fatalf("keeper's loss: %v; want it to wrap *UnreachableError", keeper.Err())
	}

	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	after, err := s.Journal(ctx, 0)
	if err != nil || len(after) != len(before) {
		t.Fatalf("journal after the outage: %d entries, %v; want the %d from before", len(after), err, len(before))
	}
	got, err := s.Get(ctx, helperKind, "a")
	if err != nil || got.Revision != r.Revision || string(got.Data) != string(r.Data) {
		t.Fatalf("record after the outage: %+v, %v", got, err)
	}
}

// TestQuorumLostWritesFail: with two of three members dead, writers fail
// with exit 7 once their deadline passes; a failure that is not marked
// unknown left nothing behind, and after the restart no increment is lost.
func TestQuorumLostWritesFail(t *testing.T) {
	const writers = 4
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	const prefix = "/quorum"
	setup := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix})
	if _, err := setup.Create(ctx, helperKind, "counter", json.RawMessage(`{"n":0}`), ev); err != nil {
		t.Fatal(err)
	}
	var landed, failed atomic.Int64
	stop := make(chan struct{})
	results := make([][]attempt, writers)
	var wg sync.WaitGroup
	for w := range writers {
		s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix, Timeout: time.Second})
		wg.Go(func() {
			for try := 0; ; try++ {
				select {
				case <-stop:
					return
				default:
				}
				a := incrementOnce(ctx, s, fmt.Sprintf("w%d-%d", w, try))
				results[w] = append(results[w], a)
				var ce *state.ConflictError
				switch {
				case a.err == nil:
					landed.Add(1)
				case !errors.As(a.err, &ce):
					failed.Add(1)
				}
			}
		})
	}
	waitFor(t, func() bool { return landed.Load() >= 20 })
	c.Kill(1)
	c.Kill(2)
	before := failed.Load()
	waitFor(t, func() bool { return failed.Load() >= before+writers })
	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(2); err != nil {
		t.Fatal(err)
	}
	after := landed.Load()
	waitFor(t, func() bool { return landed.Load() >= after+20 })
	close(stop)
	wg.Wait()

	es, err := setup.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	inJournal := map[string]bool{}
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("journal entry %d has seq %d", i, e.Seq)
		}
		var d struct{ Token string }
		json.Unmarshal(e.Detail, &d)
		inJournal[d.Token] = true
	}
	unreachable, unknown := 0, 0
	for _, as := range results {
		for _, a := range as {
			var ue *state.UnreachableError
			var ce *state.ConflictError
			switch {
			case a.err == nil:
				if !inJournal[a.token] {
					t.Errorf("landed write %s is not in the journal", a.token)
				}
			case errors.As(a.err, &ue) && ue.Unknown:
				unknown++ // may have landed: the journal tells
			case errors.As(a.err, &ue):
				unreachable++
				if inJournal[a.token] {
					t.Errorf("write %s failed (%v) but is in the journal", a.token, a.err)
				}
			case errors.As(a.err, &ce):
				if inJournal[a.token] {
					t.Errorf("write %s conflicted but is in the journal", a.token)
				}
			default:
				t.Errorf("write %s: %v; want exit 7 or 10", a.token, a.err)
			}
			if a.err != nil {
				if code := cmdutil.Classify(a.err).Exit; code != 7 && code != 10 {
					t.Errorf("write %s failed with exit %d: %v", a.token, code, a.err)
				}
			}
		}
	}
	if unreachable == 0 {
		t.Fatal("no write failed as unreachable while the quorum was lost")
	}
	r, err := setup.Get(ctx, helperKind, "counter")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ N int }
	json.Unmarshal(r.Data, &v)
	if v.N != len(es)-1 || r.Revision != uint64(len(es)) {
		t.Fatalf("counter n=%d at revision %d, with %d increments journaled", v.N, r.Revision, len(es)-1)
	}
	t.Logf("%d landed, %d unreachable, %d unknown", landed.Load(), unreachable, unknown)
}

// incrementOnce tries one increment of the counter, tagged with tok.
func incrementOnce(ctx context.Context, s *etcdstore.Store, tok string) attempt {
	r, err := s.Get(ctx, helperKind, "counter")
	if err != nil {
		return attempt{tok, err}
	}
	var v struct{ N int }
	json.Unmarshal(r.Data, &v)
	d := fmt.Appendf(nil, `{"n":%d,"token":%q}`, v.N+1, tok)
	_, err = s.Update(ctx, helperKind, "counter", r.Revision, d, state.Event{Type: "widget.changed", Detail: fmt.Appendf(nil, `{"token":%q}`, tok)})
	return attempt{tok, err}
}
