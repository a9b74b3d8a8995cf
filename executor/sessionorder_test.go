package executor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// TestSessionsOfOneSecondListNewestFirst: a stop and a resume within one
// second (start times are kept to the second) still list the resumed
// session first, which `session ls --task T` readers take as the one
// running; it was the store's order, so a script stopping "the newest"
// could stop the ended one and leave the running one.
func TestSessionsOfOneSecondListNewestFirst(t *testing.T) {
	e := newTestExecutor(t)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Second)
	// IDs against the order they started in, so neither ID nor the
	// store's order gives the answer.
	tasks := map[string][]string{"tone": {"szzz", "smmm", "saaa"}, "ttwo": {"sbbb", "syyy"}}
	for id, ss := range tasks {
		createRecord(t, e, records.KindTask, id, &records.Task{ID: id, Phase: records.PhaseAllocating, Sessions: ss})
		for _, s := range ss {
			createRecord(t, e, records.KindSession, s, &records.Session{ID: s, TaskID: id, State: records.SessionStarting, StartedAt: at})
		}
	}
	ids := func(task string) []string {
		ss, err := e.ListSessions(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	if got, want := ids("tone"), []string{"saaa", "smmm", "szzz"}; !slices.Equal(got, want) {
		t.Fatalf("sessions of tone: %v, want newest first %v", got, want)
	}
	all := ids("")
	for task, ss := range tasks {
		var got []string
		for _, id := range all {
			if slices.Contains(ss, id) {
				got = append(got, id)
			}
		}
		want := slices.Clone(ss)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Fatalf("all sessions %v: %s's are %v, want newest first %v", all, task, got, want)
		}
	}
	for range 5 {
		if again := ids(""); !slices.Equal(again, all) {
			t.Fatalf("the order changed between calls: %v, then %v", all, again)
		}
	}
}

func createRecord(t *testing.T, e *Executor, kind state.Kind, name string, v any) {
	t.Helper()
	if _, err := records.Create(context.Background(), e.cfg.Store, kind, name, v, state.Event{Type: string(kind) + ".created"}, nil); err != nil {
		t.Fatal(err)
	}
}
