package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	m, err := s.readMeta()
	if err != nil {
		t.Fatal(err)
	}
	m.SchemaVersion = SchemaVersion + 1
	if err := s.writeMeta(m); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	var se *SchemaError
	if !errors.As(err, &se) || se.Found != SchemaVersion+1 {
		t.Fatalf("Open of a newer store: %v", err)
	}
	// A store already open notices the upgrade before writing.
	_, err = s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"})
	if !errors.As(err, &se) {
		t.Fatalf("Create after an upgrade: %v", err)
	}
}

func TestStoredDataKeepsBytes(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	in := json.RawMessage(`{"html": "<a&b>", "ls": "\u2028", "n": 1.50}`)
	r, err := s.Create(context.Background(), testKind, "a", in, Event{Type: "widget.added"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"html":"<a&b>","ls":"\u2028","n":1.50}`
	got, _ := s.Get(context.Background(), testKind, "a")
	if string(r.Data) != want || string(got.Data) != want {
		t.Fatalf("stored %s, returned %s; want %s", got.Data, r.Data, want)
	}
}

// TestPartialJournalLine: a crash mid-append leaves a line without its
// newline; readers skip it and the next writer truncates it.
func TestPartialJournalLine(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	for _, n := range []string{"a", "b"} {
		if _, err := s.Create(ctx, testKind, n, json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(s.path(journalFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"epoch":1,"seq":3,"ki`)
	f.Close()
	es, err := s.Journal(ctx, 0)
	if err != nil || len(es) != 2 {
		t.Fatalf("Journal with a partial line = %v, %v", es, err)
	}
	if _, err := s.Create(ctx, testKind, "c", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	es, _ = s.Journal(ctx, 0)
	checkSeqs(t, es, 3)
	raw, _ := os.ReadFile(s.path(journalFile))
	if strings.Contains(string(raw), `"ki`+"\n") || strings.Count(string(raw), "\n") != 3 {
		t.Fatalf("partial line not truncated:\n%s", raw)
	}
}

func TestLastLineAcrossChunks(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/j")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	long := strings.Repeat("x", 3*tailChunk)
	content := "first\n" + long + "\npartial"
	f.WriteString(content)
	end, line, err := lastLine(f, int64(len(content)))
	if err != nil || string(line) != long || end != int64(len(content)-len("partial")) {
		t.Fatalf("lastLine = %d, %d bytes, %v", end, len(line), err)
	}
	end, line, err = lastLine(f, int64(len("first\n")))
	if err != nil || string(line) != "first" || end != 6 {
		t.Fatalf("lastLine of one line = %d, %q, %v", end, line, err)
	}
	end, line, err = lastLine(f, 3)
	if err != nil || line != nil || end != 0 {
		t.Fatalf("lastLine of a partial line = %d, %q, %v", end, line, err)
	}
}

// Journal(after) reads back from the end to after: each after gives
// exactly the later entries, in order, whether the entries span chunk
// boundaries (one is longer than a chunk) or not, and a corrupt entry
// before after is not read at all.
func TestJournalAfterReadsBackToAfter(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	const n = 60
	for i := range n {
		msg := strings.Repeat("m", i*40)
		if i == 30 {
			msg = strings.Repeat("L", 2*tailChunk+7)
		}
		if _, err := s.Create(ctx, testKind, fmt.Sprintf("w%02d", i), json.RawMessage(`{}`), Event{Type: "widget.added", Detail: json.RawMessage(fmt.Sprintf(`{"m":%q}`, msg))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []uint64{0, 1, 29, 30, 31, 59, n, n + 5} {
		es, err := s.Journal(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		want := max(0, n-int(after))
		if len(es) != want {
			t.Fatalf("after %d: %d entries, want %d", after, len(es), want)
		}
		for i, e := range es {
			if e.Seq != after+uint64(i)+1 || e.Name != fmt.Sprintf("w%02d", int(after)+i) {
				t.Fatalf("after %d: entry %d is seq %d %s", after, i, e.Seq, e.Name)
			}
		}
	}
	// Corrupt the first entry: reading past it still works, from 0 fails
	// naming the file.
	raw, err := os.ReadFile(s.path(journalFile))
	if err != nil {
		t.Fatal(err)
	}
	raw[0] = 'x'
	if err := os.WriteFile(s.path(journalFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if es, err := s.Journal(ctx, 2); err != nil || len(es) != n-2 {
		t.Fatalf("after 2 with the first entry corrupt: %d entries, %v", len(es), err)
	}
	if _, err := s.Journal(ctx, 0); err == nil || !strings.Contains(err.Error(), "corrupt journal "+s.path(journalFile)+" at byte 0") {
		t.Fatalf("from 0 with the first entry corrupt: %v", err)
	}
}

// TestJournalRecreatedNewEpoch: seqs restart only under a new epoch.
func TestJournalRecreatedNewEpoch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if _, err := s.Create(ctx, testKind, "a", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	old, _ := s.Epoch(ctx)
	if err := os.Remove(s.path(journalFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, testKind, "b", json.RawMessage(`{}`), Event{Type: "widget.added"}); err != nil {
		t.Fatal(err)
	}
	epoch, _ := s.Epoch(ctx)
	es, _ := s.Journal(ctx, 0)
	if epoch == old || len(es) != 1 || es[0].Epoch != epoch || es[0].Seq != 1 || es[0].Name != "b" {
		t.Fatalf("after re-creation: epoch %d (was %d), journal %+v", epoch, old, es)
	}
}

func TestLockTimeoutDefault(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	if s.lockTimeout != DefaultLockTimeout {
		t.Fatalf("lock timeout %s, want %s", s.lockTimeout, DefaultLockTimeout)
	}
}

func TestClosedStore(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	s.Close()
	if _, err := s.Get(context.Background(), testKind, "a"); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

func TestProvablyGone(t *testing.T) {
	me := self()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	at := func(mod func(*Holder)) Holder { h := me; h.Since = time.Now(); mod(&h); return h }
	tests := []struct {
		name string
		h    Holder
		gone bool
	}{
		{"this process", at(func(*Holder) {}), false},
		{"exited pid", at(func(h *Holder) { h.PID = exited.Process.Pid }), true},
		{"exited pid on another host", at(func(h *Holder) { h.PID = exited.Process.Pid; h.Host = "elsewhere" }), false},
		{"before a reboot", at(func(h *Holder) { h.BootID = "another-boot" }), me.BootID != ""},
		{"unknown boot", at(func(h *Holder) { h.PID = exited.Process.Pid; h.BootID = "" }), me.BootID == ""},
		{"no pid", at(func(h *Holder) { h.PID = 0 }), false},
		// The holder ended and this process took its pid: it started later.
		{"pid taken since", at(func(h *Holder) { h.Start-- }), me.Start != 0},
		{"start unknown", at(func(h *Holder) { h.Start = 0 }), false},
	}
	for _, tc := range tests {
		if got := provablyGone(tc.h, me); got != tc.gone {
			t.Errorf("%s: provablyGone = %v, want %v", tc.name, got, tc.gone)
		}
	}
}

func TestJournalWithoutMetaRefused(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	if err := os.Remove(s.path(metaFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "no meta.json") {
		t.Fatalf("Open without meta.json: %v", err)
	}
}
