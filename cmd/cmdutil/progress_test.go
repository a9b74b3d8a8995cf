package cmdutil

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func frames(out string) []string         { return strings.Split(out, "\r\x1b[2K") }
func lastFrame(out string) string        { fs := frames(out); return fs[len(fs)-1] }

// On a terminal the step under way is one line redrawn in place, with a
// spinner and its elapsed time; the next step leaves it finished with the
// time it took, and news of a step (the upload's bytes) redraws it.
func TestProgressOnATerminal(t *testing.T) {
	var out bytes.Buffer
	clock := newClock()
	p := newProgress(&out, true, false, 0, clock.now)
	p.Step("Connecting")
	if got := lastFrame(out.String()); got != "⠋ Connecting 0.0s" {
		t.Fatalf("first frame %q", got)
	}
	clock.add(300 * time.Millisecond)
	p.tick()
	if got := lastFrame(out.String()); got != "⠙ Connecting 0.3s" {
		t.Fatalf("after a tick %q", got)
	}
	clock.add(900 * time.Millisecond)
	p.Step("Uploading helper (0.0 of 8.3 MB)")
	clock.add(2 * time.Second)
	p.Step("Uploading helper (4.1 of 8.3 MB)")
	if got := lastFrame(out.String()); got != "⠋ Uploading helper (4.1 of 8.3 MB) 2.0s" {
		t.Fatalf("upload news %q", got)
	}
	clock.add(75 * time.Second)
	p.Step("Preparing task directory")
	clock.add(1500 * time.Millisecond)
	p.Done(true)
	want := "✓ Connecting (1.2s)\n" +
		"✓ Uploading helper (4.1 of 8.3 MB) (1m17s)\n" +
		"✓ Preparing task directory (1.5s)\n"
	if got := finished(out.String()); got != want {
		t.Fatalf("finished lines:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasSuffix(out.String(), "\n") {
		t.Fatalf("the terminal is left mid-line: %q", out.String())
	}
	n := out.Len()
	p.Done(true)
	p.tick()
	if out.Len() != n {
		t.Fatalf("wrote after Done: %q", out.String()[n:])
	}
}

// finished keeps what a terminal shows once every redraw is done: the
// last frame of each line.
func finished(out string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		b.WriteString(lastFrame(line))
	}
	return b.String()
}

// A failed step is left marked as failed; a long step is cut to the
// terminal's width so that it never wraps.
func TestProgressFailureAndWidth(t *testing.T) {
	var out bytes.Buffer
	clock := newClock()
	p := newProgress(&out, true, false, 20, clock.now)
	p.Step("Preparing task directory on a host with a long name")
	for _, f := range frames(out.String()) {
		if w := len([]rune(f)); w > 19 {
			t.Fatalf("frame %q is %d columns, wider than 19", f, w)
		}
	}
	clock.add(time.Second)
	p.Done(false)
	if got := strings.TrimSuffix(finished(out.String()), "\n"); !strings.HasPrefix(got, "✗ Preparing") || !strings.HasSuffix(got, "…") || len([]rune(got)) > 19 {
		t.Fatalf("failed step %q", got)
	}
}

// Without a terminal each step is a plain line, news included at most
// once a second; with --json nothing at all.
func TestProgressPlainAndSilent(t *testing.T) {
	var plain, silent bytes.Buffer
	clock := newClock()
	for _, p := range []*Progress{newProgress(&plain, false, false, 80, clock.now), newProgress(&silent, true, true, 80, clock.now)} {
		p.Step("Connecting")
		p.Step("Uploading helper (0.0 of 8.3 MB)")
		clock.add(500 * time.Millisecond)
		p.Step("Uploading helper (4.0 of 8.3 MB)") // too soon after the last line
		clock.add(time.Second)
		p.Step("Uploading helper (8.3 of 8.3 MB)")
		// A fast upload: its last news, held back, shows when the next
		// step begins, and at Done.
		p.Step("Uploading helper (0.0 of 1.7 MB)")
		p.Step("Uploading helper (1.7 of 1.7 MB)")
		p.Step("Preparing task directory")
		p.Step("Uploading helper (0.0 of 1.7 MB)")
		p.Step("Uploading helper (1.7 of 1.7 MB)")
		p.Done(true)
	}
	if want := "• Connecting\n• Uploading helper (0.0 of 8.3 MB)\n• Uploading helper (8.3 of 8.3 MB)\n" +
		"• Uploading helper (1.7 of 1.7 MB)\n• Preparing task directory\n• Uploading helper (0.0 of 1.7 MB)\n• Uploading helper (1.7 of 1.7 MB)\n"; plain.String() != want {
		t.Fatalf("plain %q, want %q", plain.String(), want)
	}
	if silent.Len() != 0 {
		t.Fatalf("--json wrote %q", silent.String())
	}
}

// The spinner turns on its own between steps, and Done stops it before
// returning, leaving the line finished.
func TestProgressTickerStopsOnDone(t *testing.T) {
	w := &lockedBuffer{}
	p := newProgress(w, true, false, 0, time.Now)
	p.every = time.Millisecond
	p.Step("Connecting")
	for deadline := time.Now().Add(5 * time.Second); strings.Count(w.String(), "\r") < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the spinner did not turn: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	ticker := p.done
	p.mu.Unlock()
	p.Done(true)
	select {
	case <-ticker:
	default:
		t.Fatal("the spinner still turns after Done returned")
	}
	if got := w.String(); !strings.HasSuffix(got, "\n") {
		t.Fatalf("the terminal is left mid-line: %q", got)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A warning, or a line of a script's output (dimmed, indented, made
// safe), gets a line of its own above the step under way, which is drawn
// again below it. Plain output has the warning between the steps and no
// script output (the log keeps it); --json neither.
func TestProgressWarnAndOutput(t *testing.T) {
	var out bytes.Buffer
	clock := newClock()
	p := newProgress(&out, true, false, 0, clock.now)
	p.Step("Preparing task directory")
	p.Warn("agent command \"x\" is not on prod yet")
	p.Output("npm ci \x1b[31mred")
	if got := out.String(); !strings.HasSuffix(got, "\r\x1b[2Kwarning: agent command \"x\" is not on prod yet\n\r\x1b[2K⠋ Preparing task directory 0.0s"+
		"\r\x1b[2K  npm ci \\x1b[31mred\n\r\x1b[2K⠋ Preparing task directory 0.0s") {
		t.Fatalf("on a terminal: %q", got)
	}
	out.Reset()
	p = newProgress(&out, false, false, 0, clock.now)
	p.Step("Preparing task directory")
	p.Warn("w")
	p.Output("npm ci")
	if got := out.String(); got != "• Preparing task directory\nwarning: w\n" {
		t.Fatalf("plain: %q", got)
	}
	out.Reset()
	newProgress(&out, false, true, 0, clock.now).Warn("w")
	if out.Len() != 0 {
		t.Fatalf("--json: %q", out.String())
	}
}

// A step that kept something as it was ends with neither a tick nor a
// cross.
func TestProgressKept(t *testing.T) {
	var out bytes.Buffer
	clock := newClock()
	p := newProgress(&out, true, false, 0, clock.now)
	p.Step("Reclaiming task directory")
	clock.add(time.Second)
	p.Kept()
	if got := finished(out.String()); got != "- Reclaiming task directory (1.0s)\n" {
		t.Fatalf("kept step %q", got)
	}
}
