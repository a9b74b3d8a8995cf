package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// TestOneTaskPerKeyOnEveryStore: creations of tasks with one
// idempotency key, from executors that share a store (processes on one
// machine, or machines on etcd) and start together, leave one task with
// the key; every other creation is told which one it is.
func TestOneTaskPerKeyOnEveryStore(t *testing.T) {
	const racers = 6
	t.Run("file", func(t *testing.T) {
		st, err := state.Open(t.TempDir(), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		execs := make([]*Executor, racers)
		for i := range execs {
			execs[i] = New(Config{Store: st, StateDir: t.TempDir()})
		}
		keyRace(t, execs)
	})
	t.Run("etcd", func(t *testing.T) {
		c := etcdtest.Start(t, 1)
		execs := make([]*Executor, racers)
		for i := range execs {
			st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/keys"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			execs[i] = New(Config{Store: st, StateDir: t.TempDir(), ClaimTTL: 10 * time.Second})
		}
		keyRace(t, execs)
	})
}

func keyRace(t *testing.T, execs []*Executor) {
	ctx := context.Background()
	st := execs[0].Store()
	host, _ := json.Marshal(records.Host{Name: "prod", Alias: "prod", WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
	if _, err := st.Create(ctx, records.KindHost, "prod", host, state.Event{Type: "host.added"}); err != nil {
		t.Fatal(err)
	}
	if _, err := execs[0].ApplyProfile(ctx, "web.yaml", []byte("name: web\nhost: prod\nrepositories: [{name: app, url: /u}]\n")); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		key := fmt.Sprintf("key-%d", round)
		errs := make([]error, len(execs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, e := range execs {
			wg.Go(func() {
				<-start
				tk := &records.Task{ID: fmt.Sprintf("t%dr%d", i, round), Host: "prod", Profile: "web", Phase: records.PhaseAllocating,
					Idempotency: &records.Idempotency{Key: key, Request: "same"}}
				tc, err := e.createTask(ctx, tk)
				if err == nil {
					tc.release(ctx)
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		won := ""
		for i, err := range errs {
			if err == nil {
				if won != "" {
					t.Fatalf("round %d: tasks %s and t%dr%d both have key %s", round, won, i, round, key)
				}
				won = fmt.Sprintf("t%dr%d", i, round)
			}
		}
		if won == "" {
			t.Fatalf("round %d: no creation won: %v", round, errs)
		}
		for i, err := range errs {
			var taken *keyTakenError
			if err != nil && (!errors.As(err, &taken) || taken.task.ID != won) {
				t.Fatalf("round %d: racer %d: %v; want the key taken by %s", round, i, err, won)
			}
		}
		owner, err := execs[1].taskWithKey(ctx, key)
		if err != nil || owner == nil || owner.ID != won {
			t.Fatalf("round %d: the key's task is %+v (%v), want %s", round, owner, err, won)
		}
	}
}
