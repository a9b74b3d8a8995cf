package records

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

func openJournalStore(t *testing.T) *state.FileStore {
	t.Helper()
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func putHost(t *testing.T, st state.Store, name string) {
	t.Helper()
	b, _ := json.Marshal(Host{Name: name, Status: HostAdmitted})
	if _, err := st.Create(context.Background(), KindHost, name, b, Event("host.added", Detail{Host: name})); err != nil {
		t.Fatal(err)
	}
}

// hiding drops some sequence numbers from the journal, as a store that
// lost entries would.
type hiding struct {
	*state.FileStore
	hide map[uint64]bool
}

func (h *hiding) Journal(ctx context.Context, after uint64) ([]state.Entry, error) {
	es, err := h.FileStore.Journal(ctx, after)
	return slices.DeleteFunc(es, func(e state.Entry) bool { return h.hide[e.Seq] }), err
}

func seqs(es []state.Entry) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// A cursor follows the journal without a hole; a hole stops it at the
// gap, a re-created journal at the new epoch.
func TestCursorNextStopsAtGapsAndNewEpochs(t *testing.T) {
	ctx := context.Background()
	st := openJournalStore(t)
	es, cur, err := Head(ctx, st)
	if err != nil || len(es) != 0 || cur.Seq != 0 || cur.Epoch == 0 {
		t.Fatalf("head of an empty journal: %v %+v %v", es, cur, err)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		putHost(t, st, n)
	}
	es, brk, _, err := Next(ctx, st, cur)
	if err != nil || brk != Contiguous || !slices.Equal(seqs(es), []uint64{1, 2, 3, 4}) {
		t.Fatalf("next: %v %s %v", seqs(es), brk, err)
	}
	es, brk, gapAt, err := Next(ctx, &hiding{FileStore: st, hide: map[uint64]bool{2: true}}, cur)
	if err != nil || brk != Gap || gapAt != 3 || !slices.Equal(seqs(es), []uint64{1}) {
		t.Fatalf("next across a hole: %v %s at %d, %v", seqs(es), brk, gapAt, err)
	}
	if es, head, err := Head(ctx, st); err != nil || len(es) != 4 || head != (Cursor{Epoch: cur.Epoch, Seq: 4}) {
		t.Fatalf("head: %d entries, %+v, %v", len(es), head, err)
	}
	if err := os.Remove(filepath.Join(st.Dir(), "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	putHost(t, st, "e")
	if es, brk, _, err := Next(ctx, st, Cursor{Epoch: cur.Epoch, Seq: 4}); err != nil || brk != NewEpoch || len(es) != 0 {
		t.Fatalf("next after the journal was re-created: %v %s %v", seqs(es), brk, err)
	}
}

// Wait returns what was written after the cursor, and nothing (no error)
// when nothing was written within its bound.
func TestCursorWait(t *testing.T) {
	ctx := context.Background()
	st := openJournalStore(t)
	putHost(t, st, "a")
	_, cur, err := Head(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if es, brk, _, err := Wait(ctx, st, cur, 50*time.Millisecond); err != nil || brk != Contiguous || len(es) != 0 {
		t.Fatalf("an idle wait: %v %s %v", seqs(es), brk, err)
	}
	putHost(t, st, "b")
	if es, brk, _, err := Wait(ctx, st, cur, time.Minute); err != nil || brk != Contiguous || !slices.Equal(seqs(es), []uint64{2}) {
		t.Fatalf("a wait for a write: %v %s %v", seqs(es), brk, err)
	}
}
