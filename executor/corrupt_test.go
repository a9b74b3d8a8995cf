package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// TestUnreadableRecordsNameTheirFile: a host, profile or agent record
// whose file is not a record, whose data does not decode, or whose data
// names another record, fails ls and show with an error naming the file
// and how to move it aside (never a blank or foreign row); rm refuses it
// without --force and removes it with --force.
func TestUnreadableRecordsNameTheirFile(t *testing.T) {
	ctx := context.Background()
	type ops struct {
		ls, show func(*Executor) error
		rm       func(*Executor, bool) error
	}
	kinds := map[state.Kind]ops{
		records.KindHost: {
			ls:   func(e *Executor) error { _, err := e.ListHosts(ctx); return err },
			show: func(e *Executor) error { _, err := e.ShowHost(ctx, "bad"); return err },
			rm:   func(e *Executor, force bool) error { return e.RemoveHost(ctx, "bad", force) },
		},
		records.KindProfile: {
			ls:   func(e *Executor) error { _, err := e.ListProfiles(ctx); return err },
			show: func(e *Executor) error { _, err := e.ShowProfile(ctx, "bad"); return err },
			rm:   func(e *Executor, force bool) error { return e.RemoveProfile(ctx, "bad", force) },
		},
		records.KindAgent: {
			ls:   func(e *Executor) error { _, err := e.ListAgents(ctx); return err },
			show: func(e *Executor) error { _, err := e.ShowAgent(ctx, "bad"); return err },
			rm:   func(e *Executor, force bool) error { return e.RemoveAgent(ctx, "bad", force) },
		},
	}
	// What sits in records/<kind>/bad.json: a whole record file, or the
	// data of a well-formed record.
	contents := map[string]struct{ file, data string }{
		"not a record":   {file: "{truncated"},
		"foreign record": {file: `{"kind":"%s","name":"other","revision":1,"data":{"name":"other"}}`},
		"blank data":     {data: `{}`},
		"null data":      {data: `null`},
		"foreign data":   {data: `{"name":"other"}`},
		"mistyped data":  {data: `{"name":"bad","env":"not a list","pins":7}`},
	}
	for kind, op := range kinds {
		for what, c := range contents {
			t.Run(string(kind)+"/"+what, func(t *testing.T) {
				e := newTestExecutor(t)
				st := e.Store()
				path := st.Locate(kind, "bad")
				if c.data != "" {
					if _, err := st.Create(ctx, kind, "bad", json.RawMessage(c.data), state.Event{Type: "test.planted"}); err != nil {
						t.Fatal(err)
					}
				} else {
					os.MkdirAll(strings.TrimSuffix(path, "/bad.json"), 0o700)
					if err := os.WriteFile(path, []byte(strings.ReplaceAll(c.file, "%s", string(kind))), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				remedy := "kandev-exec " + string(kind) + " rm --force bad"
				for name, err := range map[string]error{"ls": op.ls(e), "show": op.show(e), "rm": op.rm(e, false)} {
					var ce *state.CorruptRecordError
					if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) ||
						!strings.Contains(err.Error(), "mv "+path) || !strings.Contains(err.Error(), remedy) {
						t.Fatalf("%s: %v; want an error naming %s, how to move it aside and `%s`", name, err, path, remedy)
					}
				}
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("rm without --force removed it: %v", err)
				}
				if err := op.rm(e, true); err != nil {
					t.Fatalf("rm --force: %v", err)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("rm --force left %s: %v", path, err)
				}
				if err := op.ls(e); err != nil {
					t.Fatalf("ls after rm --force: %v", err)
				}
			})
		}
	}
}
