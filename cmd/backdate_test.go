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
	editRecord(ts, args[0], args[1], args[0]+".backdated", func(v map[string]any) {
		for _, k := range []string{"created_at", "started_at", "ended_at", "touched_at"} {
			if s, ok := v[k].(string); ok {
				at, err := time.Parse(time.RFC3339Nano, s)
				ts.Check(err)
				v[k] = at.Add(-d).Format(time.RFC3339Nano)
			}
		}
	})
}

// dropfield KIND NAME FIELD: remove a field from a stored record, as a
// build from before the field existed wrote it.
func cmdDropField(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: dropfield KIND NAME FIELD")
	}
	editRecord(ts, args[0], args[1], "test", func(v map[string]any) {
		if _, ok := v[args[2]]; !ok {
			ts.Fatalf("%s %s has no field %q", args[0], args[1], args[2])
		}
		delete(v, args[2])
	})
}

// editRecord rewrites a stored record as edit changes its fields, at the
// revision read, journaled as event.
func editRecord(ts *testscript.TestScript, kind, name, event string, edit func(map[string]any)) {
	st, err := state.Open(ts.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{})
	ts.Check(err)
	defer st.Close()
	ctx := context.Background()
	rec, err := st.Get(ctx, state.Kind(kind), name)
	ts.Check(err)
	var v map[string]any
	ts.Check(json.Unmarshal(rec.Data, &v))
	edit(v)
	data, err := json.Marshal(v)
	ts.Check(err)
	_, err = st.Update(ctx, state.Kind(kind), name, rec.Revision, data, state.Event{Type: event})
	ts.Check(err)
}
