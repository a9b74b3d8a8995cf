package records

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

func openStore(t *testing.T) state.Store {
	t.Helper()
	st, err := state.Open(filepath.Join(t.TempDir(), "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newRecord is a record of kind in state s, named name.
func newRecord(kind state.Kind, name, s string) any {
	switch kind {
	case KindTask:
		return &Task{ID: name, Phase: Phase(s)}
	case KindSession:
		return &Session{ID: name, State: SessionState(s)}
	case KindHost:
		return &Host{Name: name, Status: HostStatus(s)}
	case KindJob:
		return &CleanupJob{ID: name, State: JobState(s)}
	}
	panic("no record of kind " + kind)
}

// Every state of every type, and none: a record is created in its type's
// first state only (written out here independently of the package's
// lists), by Create and CreateClaimed alike, and a refused create writes
// nothing.
func TestCreateOnlyInAFirstState(t *testing.T) {
	first := map[state.Kind]string{KindTask: "allocating", KindSession: "starting", KindHost: "admitted", KindJob: "pending"}
	all := map[state.Kind][]string{
		KindTask:    names(Phases),
		KindSession: names(SessionStates),
		KindHost:    names(HostStatuses),
		KindJob:     names(JobStates),
	}
	ctx := context.Background()
	st := openStore(t)
	for kind, states := range all {
		for _, s := range append(states, "") {
			for _, claimed := range []bool{false, true} {
				name := fmt.Sprintf("%s%s%v", kind, s, claimed)
				v := newRecord(kind, name, s)
				var err error
				if claimed {
					_, err = CreateClaimed(ctx, st, kind, name, string(kind)+".created", v, time.Minute, nil)
				} else {
					_, err = Create(ctx, st, kind, name, v, EventFor(string(kind)+".created", v), nil)
				}
				_, gerr := st.Get(ctx, kind, name)
				var te *TransitionError
				switch {
				case s == first[kind] && (err != nil || gerr != nil):
					t.Errorf("%s created %q (claimed %v): %v; stored: %v", kind, s, claimed, err, gerr)
				case s != first[kind] && (!errors.As(err, &te) || !te.Create || !errors.Is(gerr, state.ErrNotFound)):
					t.Errorf("%s created %q (claimed %v): %v, stored: %v; want a refused create and nothing stored", kind, s, claimed, err, gerr)
				}
			}
		}
	}
}

// A refused create says what was refused, and what is checked after the
// state is refused (the records it points at) is never asked.
func TestCreateRefusalNamesTheRecord(t *testing.T) {
	checked := false
	_, err := Create(context.Background(), openStore(t), KindSession, "s1", &Session{ID: "s1", State: SessionRunning},
		state.Event{Type: "session.running"}, func(state.Tx) error { checked = true; return nil })
	if err == nil || err.Error() != "session s1 cannot be created running" || checked {
		t.Fatalf("create running: %v (check ran: %v)", err, checked)
	}
}

// A create journals the event it is given: a host's says only that it
// was added, as it always has; a job's carries its Detail.
func TestCreateJournalsItsEvent(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	h := &Host{Name: "box", Status: HostAdmitted}
	if _, err := Create(ctx, st, KindHost, "box", h, state.Event{Type: "host.added"}, nil); err != nil {
		t.Fatal(err)
	}
	j := &CleanupJob{ID: "t1", TaskID: "t1", Host: "box", State: JobPending}
	if _, err := Create(ctx, st, KindJob, "t1", j, EventFor("job.pending", j), nil); err != nil {
		t.Fatal(err)
	}
	entries, err := st.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Type != "host.added" || len(entries[0].Detail) != 0 ||
		entries[1].Type != "job.pending" || DetailOf(entries[1]) != (Detail{Host: "box", TaskID: "t1", Phase: "pending"}) {
		t.Fatalf("journal: %+v", entries)
	}
}

func names[S ~string](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
