package records

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kdlbs/kandev-exec/state"
)

// A scope keeps what is about its host or task: by the entry's detail,
// else by the record it names, read once.
func TestScopeKeepsWhatConcernsIt(t *testing.T) {
	ctx := context.Background()
	st := openJournalStore(t)
	b, _ := json.Marshal(Session{ID: "s1", Host: "web", TaskID: "t1"})
	if _, err := st.Create(ctx, KindSession, "s1", b, state.Event{Type: "session.started"}); err != nil {
		t.Fatal(err)
	}
	entry := func(kind state.Kind, name string, d Detail) (state.Entry, Detail) {
		raw, _ := json.Marshal(d)
		return state.Entry{Kind: kind, Name: name, Detail: raw}, d
	}
	p := NewPlacer(st)
	for _, c := range []struct {
		sc   Scope
		kind state.Kind
		name string
		d    Detail
		want bool
	}{
		{Scope{}, KindHost, "db", Detail{}, true},
		{Scope{Host: "web"}, KindHost, "web", Detail{}, true},
		{Scope{Host: "web"}, KindHost, "db", Detail{}, false},
		{Scope{Host: "web"}, KindTask, "t2", Detail{Host: "web"}, true},
		{Scope{Task: "t1"}, KindJob, "t1", Detail{}, true},
		{Scope{Task: "t1"}, KindSession, "s1", Detail{}, true}, // placed by its record
		{Scope{Host: "db"}, KindSession, "s1", Detail{}, false},
		{Scope{Task: "t1"}, KindSession, "gone", Detail{}, false},
	} {
		e, d := entry(c.kind, c.name, c.d)
		if got := p.Keeps(ctx, c.sc, e, d); got != c.want {
			t.Errorf("%+v keeps %s %s (%+v) = %v", c.sc, c.kind, c.name, c.d, got)
		}
	}
	if !(Scope{Host: "web", Task: "t1"}).Covers("web", "t1") || (Scope{Host: "web", Task: "t1"}).Covers("web", "t2") {
		t.Error("a scope of host and task covers only both")
	}
}
