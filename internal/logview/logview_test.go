package logview

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

const sample = "[controller] 2026-03-04T10:00:00.000Z controller 7 listening on 127.0.0.1:4000\n" +
	"[controller] 2026-03-04T10:00:00.100Z agent started, pid 8\n" +
	"early output\n" +
	"[controller] 2026-03-04T11:30:00.000Z writing status.json failed: disk full; retrying\n" +
	"middle output\n" +
	"[controller] 2026-03-04T11:58:00.500Z status.json written\n" +
	"late output\n" +
	"last line without newline"

func view(t *testing.T, o Options, chunks ...string) string {
	t.Helper()
	var out bytes.Buffer
	v := New(&out, o)
	for _, c := range chunks {
		if n, err := v.Write([]byte(c)); err != nil || n != len(c) {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// bytewise writes s one byte at a time: chunking never changes a view.
func bytewise(s string) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i : i+1]
	}
	return out
}

func TestWholeLogUnchanged(t *testing.T) {
	all := Options{Backlog: 1 << 62}
	if got := view(t, all, sample); got != sample {
		t.Fatalf("got %q", got)
	}
	if got := view(t, all, bytewise(sample)...); got != sample {
		t.Fatalf("bytewise: %q", got)
	}
}

func TestTail(t *testing.T) {
	o := Options{Backlog: 1 << 62, Tail: 3}
	want := "[controller] 2026-03-04T11:58:00.500Z status.json written\nlate output\nlast line without newline"
	for _, chunks := range [][]string{{sample}, bytewise(sample)} {
		if got := view(t, o, chunks...); got != want {
			t.Fatalf("got %q", got)
		}
	}
	if got := view(t, Options{Backlog: 1 << 62, Tail: 100}, sample); got != sample {
		t.Fatalf("a tail longer than the log: %q", got)
	}
}

// --since hides exactly the lines up to the last [controller] line older
// than the cutoff; undated lines after it stay (they may be newer).
func TestSince(t *testing.T) {
	for _, tc := range []struct {
		since string
		want  string
	}{
		{"2026-03-04T09:00:00Z", sample},
		{"2026-03-04T11:00:00Z", sample[strings.Index(sample, "early output"):]},
		{"2026-03-04T11:45:00Z", "middle output\n" + sample[strings.Index(sample, "[controller] 2026-03-04T11:58"):]},
		{"2026-03-04T12:00:00Z", "late output\nlast line without newline"},
	} {
		since, _ := time.Parse(time.RFC3339, tc.since)
		if got := view(t, Options{Backlog: 1 << 62, Since: since}, bytewise(sample)...); got != tc.want {
			t.Errorf("since %s:\n got %q\nwant %q", tc.since, got, tc.want)
		}
	}
	since, _ := time.Parse(time.RFC3339, "2026-03-04T11:45:00Z")
	if got := view(t, Options{Backlog: 1 << 62, Since: since, Tail: 1}, sample); got != "last line without newline" {
		t.Errorf("since and tail: %q", got)
	}
}

// Backlog lines carry the controller's time or "-"; live lines the time
// they arrived, stamped where each line begins.
func TestTimestamps(t *testing.T) {
	arrival := time.Date(2026, 3, 4, 12, 0, 7, 0, time.UTC)
	log := "[controller] 2026-03-04T10:00:00.100Z agent started, pid 8\nold\npart"
	live := "ial\nnew one\nnew t"
	o := Options{Backlog: int64(len(log)), Timestamps: true, Now: func() time.Time { return arrival }}
	want := "2026-03-04T10:00:00Z [controller] 2026-03-04T10:00:00.100Z agent started, pid 8\n" +
		"-                    old\n" +
		"-                    partial\n" +
		"2026-03-04T12:00:07Z new one\n" +
		"2026-03-04T12:00:07Z new t"
	if got := view(t, o, log+live); got != want {
		t.Fatalf("one write:\n got %q\nwant %q", got, want)
	}
	if got := view(t, o, bytewise(log+live)...); got != want {
		t.Fatalf("bytewise:\n got %q\nwant %q", got, want)
	}
}

// Live output is never held back, not even by a tail.
func TestLiveIsNotTailed(t *testing.T) {
	log := "a\nb\nc\n"
	var out bytes.Buffer
	v := New(&out, Options{Backlog: int64(len(log)), Tail: 1})
	v.Write([]byte(log + "d\ne"))
	if out.String() != "c\nd\ne" {
		t.Fatalf("before Close: %q", out.String())
	}
}

func TestPartialStartSkipsTheFragment(t *testing.T) {
	if got := view(t, Options{Backlog: 1 << 62, Partial: true}, "gment\nwhole\n"); got != "whole\n" {
		t.Fatalf("got %q", got)
	}
}

// What is held is bounded: the oldest lines go, and Dropped counts them.
func TestHeldIsBounded(t *testing.T) {
	line := strings.Repeat("x", 1<<20-1) + "\n"
	var out bytes.Buffer
	v := New(&out, Options{Backlog: 1 << 62, Since: time.Now()})
	for range 10 {
		v.Write([]byte(line))
	}
	v.Close()
	note, shown, _ := strings.Cut(out.String(), "\n")
	if len(shown) > MaxHeld || len(shown) < MaxHeld-len(line) || v.Dropped() != int64(10*len(line)-len(shown)) ||
		note != fmt.Sprintf("[kandev-exec] %d bytes before this line not shown: more than 8 MiB would have had to be held back", v.Dropped()) {
		t.Fatalf("shown %d bytes, dropped %d, note %q", len(shown), v.Dropped(), note)
	}
}

func TestControllerTime(t *testing.T) {
	at, ok := ControllerTime([]byte("[controller] 2026-03-04T10:00:00.123Z agent exited with code 0\n"))
	if !ok || !at.Equal(time.Date(2026, 3, 4, 10, 0, 0, 123e6, time.UTC)) {
		t.Fatalf("got %v %v", at, ok)
	}
	for _, l := range []string{"agent output\n", "[controller] not-a-time x\n", " [controller] 2026-03-04T10:00:00Z x\n"} {
		if _, ok := ControllerTime([]byte(l)); ok {
			t.Errorf("%q read as a controller line", l)
		}
	}
}
