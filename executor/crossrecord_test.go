package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// raceRounds bounds the cross-record races below. Before the checks moved
// into the write's transaction, host rm racing profile apply left a
// profile naming a deleted host in about one round in six.
const raceRounds = 60

// race runs a and b at once and returns their errors.
func race(a, b func() error) (errA, errB error) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; errA = a() })
	wg.Go(func() { <-start; errB = b() })
	close(start)
	wg.Wait()
	return errA, errB
}

func exists(t *testing.T, st state.Store, kind state.Kind, name string) bool {
	t.Helper()
	_, err := st.Get(context.Background(), kind, name)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestHostRemoveRacingProfileApply: host rm and profile apply naming that
// host, started together, never leave a profile naming a deleted host.
func TestHostRemoveRacingProfileApply(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	st := e.Store()
	hostData, _ := json.Marshal(records.Host{Name: "h", Alias: "h", WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
	for round := range raceRounds {
		if _, err := st.Create(ctx, records.KindHost, "h", hostData, state.Event{Type: "host.added"}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("p%d", round)
		errRm, errApply := race(
			func() error { return e.RemoveHost(ctx, "h", false) },
			func() error {
				_, err := e.ApplyProfile(ctx, name+".yaml", []byte("name: "+name+"\nhost: h\nrepositories: [{name: app, url: /u}]\n"))
				return err
			})
		hostLeft, profileMade := exists(t, st, records.KindHost, "h"), exists(t, st, records.KindProfile, name)
		if !hostLeft && profileMade {
			t.Fatalf("round %d: profile %s names host h, which was removed (rm: %v, apply: %v)", round, name, errRm, errApply)
		}
		// One side loses: the removal sees the profile, or the apply
		// finds no host.
		var inUse *InUseError
		if errRm != nil && !errors.As(errRm, &inUse) || (errRm == nil) == (errApply == nil) {
			t.Fatalf("round %d: rm: %v, apply: %v; want exactly one refused", round, errRm, errApply)
		}
		if hostLeft {
			if err := e.RemoveHost(ctx, "h", true); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRemoveRacingTaskCreate: host rm, profile rm and agent rm, each racing
// the creation of a task naming what they remove, never leave a task
// naming a removed record.
func TestRemoveRacingTaskCreate(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []state.Kind{records.KindHost, records.KindProfile, records.KindAgent} {
		t.Run(string(kind), func(t *testing.T) {
			e := newTestExecutor(t)
			st := e.Store()
			hostData, _ := json.Marshal(records.Host{Name: "other", Alias: "other", WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
			if _, err := st.Create(ctx, records.KindHost, "other", hostData, state.Event{Type: "host.added"}); err != nil {
				t.Fatal(err)
			}
			// The profile lives on "other", so that only the task can stop
			// the removal of host "prod".
			const profile = "name: web\nhost: other\nrepositories: [{name: app, url: /u}]\n"
			remake := map[state.Kind]func() error{
				records.KindHost: func() error {
					data, _ := json.Marshal(records.Host{Name: "prod", Alias: "prod", WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
					_, err := st.Create(ctx, records.KindHost, "prod", data, state.Event{Type: "host.added"})
					return err
				},
				records.KindProfile: func() error { _, err := e.ApplyProfile(ctx, "web.yaml", []byte(profile)); return err },
				records.KindAgent: func() error {
					_, err := e.ApplyAgent(ctx, "a.yaml", []byte("name: claude\ncommand: [claude]\n"))
					return err
				},
			}
			for _, k := range []state.Kind{records.KindProfile, records.KindAgent} {
				if err := remake[k](); err != nil {
					t.Fatal(err)
				}
			}
			remove := map[state.Kind]func() error{
				records.KindHost:    func() error { return e.RemoveHost(ctx, "prod", false) },
				records.KindProfile: func() error { return e.RemoveProfile(ctx, "web", false) },
				records.KindAgent:   func() error { return e.RemoveAgent(ctx, "claude", false) },
			}[kind]
			name := map[state.Kind]string{records.KindHost: "prod", records.KindProfile: "web", records.KindAgent: "claude"}[kind]
			for round := range raceRounds {
				if !exists(t, st, kind, name) {
					if err := remake[kind](); err != nil {
						t.Fatal(err)
					}
				}
				task := &records.Task{ID: fmt.Sprintf("t%d", round), Host: "prod", Profile: "web", Agent: "claude", Phase: records.PhaseAllocating}
				errRm, errCreate := race(remove, func() error {
					return e.createRecord(ctx, records.KindTask, task.ID, "task.allocating", task)
				})
				left, made := exists(t, st, kind, name), exists(t, st, records.KindTask, task.ID)
				if !left && made {
					t.Fatalf("round %d: task %s names %s %s, which was removed (rm: %v, create: %v)", round, task.ID, kind, name, errRm, errCreate)
				}
				var inUse *InUseError
				var nf *records.NotFoundError
				if errRm != nil && !errors.As(errRm, &inUse) || errCreate != nil && !errors.As(errCreate, &nf) ||
					(errRm == nil) == (errCreate == nil) {
					t.Fatalf("round %d: rm: %v, create: %v; want exactly one refused", round, errRm, errCreate)
				}
				// Retire the task so that it stops no later removal.
				if made {
					r, _ := st.Get(ctx, records.KindTask, task.ID)
					task.Phase = records.PhaseAbsent
					data, _ := json.Marshal(task)
					if _, err := st.Update(ctx, records.KindTask, task.ID, r.Revision, data, state.Event{Type: "task.archived"}); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
