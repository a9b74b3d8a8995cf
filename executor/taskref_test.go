package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// A task is named by its ID, its name when only one task has it, or a
// unique ID prefix; a name two tasks share is ambiguous, naming both.
func TestGetTaskByIDNameOrPrefix(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	st := e.Store()
	for _, task := range []records.Task{
		{ID: "tabcdefghijkl", Name: "fix-tests"},
		{ID: "tabzzzzzzzzzz", Name: "twice"},
		{ID: "tqqqqqqqqqqqq", Name: "twice"},
		{ID: "trrrrrrrrrrrr", Name: "tabc"}, // a name that is also another task's ID prefix
		{ID: "tsssssssssss2", Name: "has spaces and / slash"},
	} {
		data, _ := json.Marshal(task)
		if _, err := st.Create(ctx, records.KindTask, task.ID, data, state.Event{Type: "task.created"}); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]string{
		"tabcdefghijkl":          "tabcdefghijkl", // exact ID
		"fix-tests":              "tabcdefghijkl", // name
		"tabc":                   "trrrrrrrrrrrr", // a name wins over an ID prefix
		"tabcd":                  "tabcdefghijkl", // unique prefix
		"has spaces and / slash": "tsssssssssss2", // any name, even one no ID could be
	} {
		got, _, err := e.GetTask(ctx, ref)
		if err != nil || got.ID != want {
			t.Errorf("GetTask(%q) = %v, %v; want %s", ref, got, err, want)
		}
	}
	_, _, err := e.GetTask(ctx, "twice")
	var amb *records.AmbiguousError
	if !errors.As(err, &amb) || !amb.ByName || !reflect.DeepEqual(amb.Matches, []string{"tabzzzzzzzzzz", "tqqqqqqqqqqqq"}) ||
		err.Error() != `task name "twice" is ambiguous: tabzzzzzzzzzz, tqqqqqqqqqqqq` {
		t.Fatalf("shared name: %v", err)
	}
	if _, _, err := e.GetTask(ctx, "tab"); !errors.As(err, &amb) || amb.ByName {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	var nf *records.NotFoundError
	for _, ref := range []string{"nosuch", "no such / name"} {
		if _, _, err := e.GetTask(ctx, ref); !errors.As(err, &nf) {
			t.Errorf("GetTask(%q): %v, want not found", ref, err)
		}
	}
}
