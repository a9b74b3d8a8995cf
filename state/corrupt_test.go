package state

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCorruptRecordNamesItsFile: a record file that does not parse, or
// holds another record, is an error naming the file and how to move it
// aside, from Get and List alike; Discard removes it and journals that.
func TestCorruptRecordNamesItsFile(t *testing.T) {
	ctx := context.Background()
	for name, content := range map[string]string{
		"garbage": "{not json",
		"other":   `{"kind":"widget","name":"someone","revision":1,"data":{}}`,
		"empty":   `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{})
			if _, err := s.Create(ctx, testKind, "ok", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
				t.Fatal(err)
			}
			path := s.recordPath(testKind, "bad")
			if err := os.WriteFile(path, []byte(content), fileMode); err != nil {
				t.Fatal(err)
			}
			_, gerr := s.Get(ctx, testKind, "bad")
			_, lerr := s.List(ctx, testKind)
			for op, err := range map[string]error{"Get": gerr, "List": lerr} {
				var ce *CorruptRecordError
				if !errors.As(err, &ce) || ce.Where != path || !strings.Contains(err.Error(), "mv "+path+" "+path+".bad") {
					t.Fatalf("%s: %v; want a *CorruptRecordError naming %s and how to move it", op, err, path)
				}
			}
			if err := s.Discard(ctx, testKind, "bad", Event{Type: "widget.discarded"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("file still there: %v", err)
			}
			es, _ := s.Journal(ctx, 0)
			if last := es[len(es)-1]; last.Type != "widget.discarded" || last.Name != "bad" || last.Revision != 0 {
				t.Fatalf("journal: %+v", last)
			}
			if recs, err := s.List(ctx, testKind); err != nil || len(recs) != 1 {
				t.Fatalf("List after Discard: %v, %v", recs, err)
			}
		})
	}
}

// TestDiscardSparesCaseTwin: on a case-insensitive filesystem "Web" reads
// web's file; discarding "Web" must not delete "web".
func TestDiscardSparesCaseTwin(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if _, err := s.Create(ctx, testKind, "web", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	// What a case-insensitive filesystem shows under Web.json.
	b, _ := os.ReadFile(s.recordPath(testKind, "web"))
	os.WriteFile(s.recordPath(testKind, "Web"), b, fileMode)
	var ce *CorruptRecordError
	if err := s.Discard(ctx, testKind, "Web", Event{Type: "widget.discarded"}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "case-insensitive") {
		t.Fatalf("Discard of a case twin: %v", err)
	}
	if _, err := os.Lstat(s.recordPath(testKind, "Web")); err != nil {
		t.Fatalf("case twin removed: %v", err)
	}
}

// The command that moves an unreadable record aside quotes its path: a
// store under "Application Support" (macOS) holds a space.
func TestCorruptRecordMoveQuotesItsPath(t *testing.T) {
	e := &CorruptRecordError{Kind: "host", Name: "h", Where: "/Users/a/Library/Application Support/kandev-exec/h.json", Reason: "bad"}
	want := "(mv '/Users/a/Library/Application Support/kandev-exec/h.json' '/Users/a/Library/Application Support/kandev-exec/h.json.bad')"
	if !strings.Contains(e.Error(), want) {
		t.Fatalf("%s\nwant it to suggest %s", e.Error(), want)
	}
}
