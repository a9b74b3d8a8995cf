package records

import (
	"context"
	"testing"
	"time"
)

// A sweep that ran no job updates the sweep record (doctor reads it) and
// journals nothing; one that ran a job journals sweep.ran.
func TestRecordSweepJournalsOnlyWork(t *testing.T) {
	ctx := context.Background()
	st := openJournalStore(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	types := func() []string {
		t.Helper()
		es, err := st.Journal(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Type)
		}
		return out
	}
	for i, run := range []SweepRun{
		{At: at, By: "first", Ran: 0},                  // the first record of all, quiet
		{At: at.Add(time.Minute), By: "a", Ran: 0},     // over a quiet one
		{At: at.Add(2 * time.Minute), By: "b", Ran: 2}, // news
		{At: at.Add(3 * time.Minute), By: "c", Ran: 0}, // over a journaled one
	} {
		if err := RecordSweep(ctx, st, run); err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
		last, err := LastSweep(ctx, st)
		if err != nil || last == nil || !last.At.Equal(run.At) || last.By != run.By || last.Ran != run.Ran {
			t.Fatalf("sweep %d: last %+v, %v; want %+v", i, last, err, run)
		}
	}
	if got := types(); len(got) != 1 || got[0] != "sweep.ran" {
		t.Fatalf("journal %v, want the one sweep that ran jobs", got)
	}
	rec, err := st.Get(ctx, KindSweep, sweepName)
	if err != nil || rec.Revision != 4 {
		t.Fatalf("sweep record at revision %d (%v), want one per write: 4", rec.Revision, err)
	}
}
