package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kdlbs/kandev-exec/state"
)

// putrecord KIND NAME TYPE DATAFILE [DETAILFILE]: write a record as the
// executor would (created, or updated at its current revision) with the
// journal event TYPE and its detail, so transcripts of watch can stage a
// drain, a quarantine or an archive without a host to run them on.
func cmdPutRecord(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 || len(args) > 5 {
		ts.Fatalf("usage: putrecord KIND NAME TYPE DATAFILE [DETAILFILE]")
	}
	st, err := state.Open(ts.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{})
	ts.Check(err)
	defer st.Close()
	kind, name := state.Kind(args[0]), args[1]
	data := json.RawMessage(ts.ReadFile(args[3]))
	ev := state.Event{Type: args[2]}
	if len(args) == 5 {
		ev.Detail = json.RawMessage(ts.ReadFile(args[4]))
	}
	ctx := context.Background()
	rec, err := st.Get(ctx, kind, name)
	switch {
	case errors.Is(err, state.ErrNotFound):
		_, err = st.Create(ctx, kind, name, data, ev)
	case err == nil:
		_, err = st.Update(ctx, kind, name, rec.Revision, data, ev)
	}
	ts.Check(err)
}

// holdclaim KIND NAME: take the claim on a record the way another
// kandev-exec at work would (this live process is its holder, for ten
// minutes), released when the transcript ends.
func cmdHoldClaim(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: holdclaim KIND NAME")
	}
	st, err := state.Open(ts.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{})
	ts.Check(err)
	defer st.Close()
	c, err := st.AcquireClaim(context.Background(), state.Kind(args[0]), args[1], 10*time.Minute)
	ts.Check(err)
	ts.Defer(func() {
		if st, err := state.Open(ts.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{}); err == nil {
			_ = st.ReleaseClaim(context.Background(), c)
			st.Close()
		}
	})
}
