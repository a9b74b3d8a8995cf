//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// storeBackend opens a fresh store of one backend.
type storeBackend struct {
	name string
	open func(t *testing.T) state.Store
}

// TestStoreBench: the file store beside a one-member etcd on loopback:
// record writes and lists at 100 and 10,000 records, a claim's
// acquire-checkpoint-release cycle, and how long a journal follower
// takes to see a write. Figures only; nothing is asserted about speed.
func TestStoreBench(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := 0
	backends := []storeBackend{
		{"file", func(t *testing.T) state.Store {
			s, err := state.Open(t.TempDir(), state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"etcd (1 member)", func(t *testing.T) state.Store {
			n++
			s, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: fmt.Sprintf("/bench/%d", n)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	ctx := context.Background()
	fmt.Printf("\nstate store: the file store (baseline) beside a one-member etcd on loopback (%s); medians unless said\n", etcdVersion(t, c))
	fmt.Printf("%-44s %14s %14s\n", "", backends[0].name, backends[1].name)
	row := func(what string, f func(b storeBackend) string) {
		fmt.Printf("%-44s %14s %14s\n", what, f(backends[0]), f(backends[1]))
	}
	stores := map[string]state.Store{}
	for _, b := range backends {
		stores[b.name] = b.open(t)
	}
	for _, size := range []int{100, 10000} {
		row(fmt.Sprintf("create, mean over growing to %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			have, _ := s.List(ctx, "task")
			start := time.Now()
			for i := len(have); i < size; i++ {
				if _, err := s.Create(ctx, "task", fmt.Sprintf("t%05d", i), taskData(i), state.Event{Type: "task.added"}); err != nil {
					t.Fatal(err)
				}
			}
			return dur(time.Since(start) / time.Duration(size-len(have)))
		})
		row(fmt.Sprintf("update one record, at %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			return dur(timeIt(50, nil, func() {
				r, err := s.Get(ctx, "task", "t00007")
				if err == nil {
					_, err = s.Update(ctx, "task", "t00007", r.Revision, taskData(r.Revision), state.Event{Type: "task.phase"})
				}
				if err != nil {
					t.Fatal(err)
				}
			}))
		})
		row(fmt.Sprintf("list (task ls), %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			runs := 20
			if size > 1000 {
				runs = 5
			}
			return dur(timeIt(runs, nil, func() {
				recs, err := s.List(ctx, "task")
				if err != nil || len(recs) != size {
					t.Fatalf("List = %d records, %v", len(recs), err)
				}
			}))
		})
	}
	row("claim: acquire, checkpoint, release", func(b storeBackend) string {
		s := b.open(t)
		if _, err := s.Create(ctx, "job", "j", json.RawMessage(`{}`), state.Event{Type: "job.added"}); err != nil {
			t.Fatal(err)
		}
		return dur(timeIt(50, nil, func() {
			r, err := s.Get(ctx, "job", "j")
			if err != nil {
				t.Fatal(err)
			}
			cl, err := s.AcquireClaim(ctx, "job", "j", time.Minute)
			if err == nil {
				cl, _, err = s.Checkpoint(ctx, cl, 1, r.Revision, taskData(r.Revision), state.Event{Type: "job.phase"})
			}
			if err == nil {
				err = s.ReleaseClaim(ctx, cl)
			}
			if err != nil {
				t.Fatal(err)
			}
		}))
	})
	row("journal follow: write start to follower", func(b storeBackend) string {
		return dur(followLatency(t, b.open(t), 50))
	})
	fmt.Println("the file store's follower polls every 50 ms; etcd's watches the journal counter")
}

func etcdVersion(t *testing.T, c *etcdtest.Cluster) string {
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	st, err := cli.Status(context.Background(), c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return "etcd " + st.Version
}

// followLatency is the median time from the start of a write to a
// follower, already waiting, receiving its entry.
func followLatency(t *testing.T, s state.Store, n int) time.Duration {
	ctx := context.Background()
	epoch, err := s.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan time.Time)
	go func() {
		defer close(seen)
		var after uint64
		for after < uint64(n) {
			es, err := s.Follow(ctx, epoch, after)
			if err != nil {
				t.Error(err)
				return
			}
			now := time.Now()
			for range es {
				seen <- now
			}
			after = es[len(es)-1].Seq
		}
	}()
	var ds []time.Duration
	for i := range n {
		// Let the follower settle into waiting: the figure is a wait's.
		time.Sleep(5 * time.Millisecond)
		start := time.Now()
		if _, err := s.Create(ctx, "follow", fmt.Sprintf("f%d", i), json.RawMessage(`{}`), state.Event{Type: "follow.added"}); err != nil {
			t.Fatal(err)
		}
		at, ok := <-seen
		if !ok {
			t.Fatal("the follower stopped")
		}
		ds = append(ds, at.Sub(start))
	}
	return median(ds)
}

// taskData is a record of a few hundred bytes, about what a task holds.
func taskData(i any) json.RawMessage {
	return fmt.Appendf(nil, `{"id":"%v","host":"prod","profile":"default","agent":"claude","branch":"kandev/task-%v","phase":"running","session":"s-%v","note":"%0200d"}`, i, i, i, 0)
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
