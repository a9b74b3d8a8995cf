package records

import (
	"context"
	"slices"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// Following the journal, for the live view and the line streams of
// `watch`: both keep a Cursor, read what follows it with Next or Wait,
// and start again from Head after a break.

// JournalReader is what following the journal needs of a store.
type JournalReader interface {
	Journal(ctx context.Context, after uint64) ([]state.Entry, error)
	Epoch(ctx context.Context) (uint64, error)
}

// Cursor is a position in the journal: an epoch and the last sequence
// number seen in it (0: nothing yet).
type Cursor struct {
	Epoch, Seq uint64
}

// Break says why the journal cannot simply be followed from a cursor.
type Break int

const (
	Contiguous Break = iota // the entries follow the cursor without a hole
	NewEpoch                // the journal was re-created: its sequence numbers start again
	Gap                     // a sequence number is missing: entries were lost or compacted away
)

func (b Break) String() string {
	switch b {
	case NewEpoch:
		return "new epoch"
	case Gap:
		return "gap"
	}
	return "contiguous"
}

// Next reads the journal after c. It returns the entries that follow c
// without a hole, and the first break, if any, that stops them: a new
// epoch (no entry is returned: the old epoch's tail is gone) or a gap
// (the entries before the hole are returned, the first one after it is
// at gapAt).
func Next(ctx context.Context, st JournalReader, c Cursor) (entries []state.Entry, brk Break, gapAt uint64, err error) {
	epoch, err := st.Epoch(ctx)
	if err != nil {
		return nil, Contiguous, 0, err
	}
	if epoch != c.Epoch {
		return nil, NewEpoch, 0, nil
	}
	es, err := st.Journal(ctx, c.Seq)
	if err != nil {
		return nil, Contiguous, 0, err
	}
	es, brk, gapAt = contiguous(c, es)
	return es, brk, gapAt, nil
}

// contiguous cuts es, read after c, at its first break.
func contiguous(c Cursor, es []state.Entry) ([]state.Entry, Break, uint64) {
	want := c.Seq + 1
	for i, e := range es {
		switch {
		case e.Epoch != c.Epoch:
			// Re-created meanwhile.
			return es[:i], NewEpoch, 0
		case e.Seq != want:
			return es[:i], Gap, e.Seq
		}
		want++
	}
	return es, Contiguous, 0
}

// Follower is a store that can wait for its journal to move
// (state.Store.Follow: the etcd store watches its journal counter, so a
// wait costs nothing while nothing happens).
type Follower interface {
	Follow(ctx context.Context, epoch, after uint64) ([]state.Entry, error)
}

// Wait is Next that waits up to d for the journal to move past c, when
// the store can wait (nothing new within d: no entries and no error); a
// store that cannot is read once, as by Next.
func Wait(ctx context.Context, st JournalReader, c Cursor, d time.Duration) ([]state.Entry, Break, uint64, error) {
	f, ok := st.(Follower)
	if !ok {
		return Next(ctx, st, c)
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	es, err := f.Follow(wctx, c.Epoch, c.Seq)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return nil, Contiguous, 0, nil // the wait ended, not the caller
		}
		return nil, Contiguous, 0, err
	}
	es, brk, gapAt := contiguous(c, es)
	return es, brk, gapAt, nil
}

// Head reads the whole journal of the current epoch, re-reading when the
// epoch changed meanwhile, and returns it with the cursor at its end.
func Head(ctx context.Context, st JournalReader) ([]state.Entry, Cursor, error) {
	for try := 0; ; try++ {
		before, err := st.Epoch(ctx)
		if err != nil {
			return nil, Cursor{}, err
		}
		es, err := st.Journal(ctx, 0)
		if err != nil {
			return nil, Cursor{}, err
		}
		after, err := st.Epoch(ctx)
		if err != nil {
			return nil, Cursor{}, err
		}
		if before == after || try == 2 {
			c := Cursor{Epoch: after}
			es = slices.DeleteFunc(es, func(e state.Entry) bool { return e.Epoch != after })
			if n := len(es); n > 0 {
				c.Seq = es[n-1].Seq
			}
			return es, c, nil
		}
	}
}
