package cmd

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kdlbs/kandev-exec/state"
)

// backdate KIND NAME DURATION: move a record's times (created_at,
// started_at, ended_at, touched_at) DURATION into the past, as if that
// long had gone by since; a transcript of what a long idle time does,
// without waiting for it.
func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: backdate KIND NAME DURATION")
	}
	d, err := time.ParseDuration(args[2])
	ts.Check(err)
	st, err := state.Open(ts.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{})
	ts.Check(err)
	defer st.Close()
	ctx := context.Background()
	rec, err := st.Get(ctx, state.Kind(args[0]), args[1])
	ts.Check(err)
	var v map[string]any
	ts.Check(json.Unmarshal(rec.Data, &v))
	for _, k := range []string{"created_at", "started_at", "ended_at", "touched_at"} {
		if s, ok := v[k].(string); ok {
			at, err := time.Parse(time.RFC3339Nano, s)
			ts.Check(err)
			v[k] = at.Add(-d).Format(time.RFC3339Nano)
		}
	}
	data, err := json.Marshal(v)
	ts.Check(err)
	_, err = st.Update(ctx, state.Kind(args[0]), args[1], rec.Revision, data, state.Event{Type: args[0] + ".backdated"})
	ts.Check(err)
}
