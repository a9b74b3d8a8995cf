package cmdutil

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/x/ansi"
)

// Progress shows a long command's steps on stderr. On a terminal the
// step under way is one line redrawn in place: a spinner, the step and
// its elapsed time; when the next step starts it is left as a finished
// line with the time it took. Without a terminal each step is a plain
// line ("• Connecting"), and with --json nothing is shown. The cursor is
// never hidden and every line ends with a newline once Done runs, so an
// interrupted command leaves the terminal as it found it.
//
// A step whose text is the current one's up to " (" (the upload's
// "Uploading helper (1.2 of 8.3 MB)") updates that step in place.
type Progress struct {
	w     io.Writer
	tty   bool
	off   bool
	width int
	now   func() time.Time
	every time.Duration // how often the spinner turns; 0: only on tick (tests)
	cs    *ColorScheme

	mu    sync.Mutex
	text  string // the step under way; "" when none
	held  string // without a terminal: its latest news, not yet printed
	start time.Time
	frame int
	stop  chan struct{}
	done  chan struct{}
}

// spin is the spinner drawn beside the step under way.
var spin = spinner.MiniDot

// NewProgress is the progress of a command writing to ios, silent with
// asJSON.
func NewProgress(ios *IOStreams, asJSON bool) *Progress {
	p := newProgress(ios.ErrOut, ios.IsStderrTTY(), asJSON, ios.TerminalWidth(), time.Now)
	p.every, p.cs = spin.FPS, ios.ColorScheme(ios.ErrOut)
	return p
}

// newProgress builds a Progress that turns its spinner only on tick, in
// plain colours (tests).
func newProgress(w io.Writer, tty, off bool, width int, now func() time.Time) *Progress {
	return &Progress{w: w, tty: tty, off: off, width: width, now: now, cs: &ColorScheme{}}
}

// Step is the callback the executor reports to: a new step, or news of
// the one under way.
func (p *Progress) Step(text string) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		// News of the step printed last comes at most once a second: a
		// log gets a line per second of a long upload, not one per report;
		// the latest is printed when the step ends, so its last news shows.
		if p.text != "" && stepKey(text) == stepKey(p.text) && p.now().Sub(p.start) < time.Second {
			p.held = text
			return
		}
		if p.text != "" && stepKey(text) != stepKey(p.text) {
			p.flushHeldLocked()
		}
		p.text, p.start, p.held = text, p.now(), ""
		fmt.Fprintf(p.w, "• %s\n", text)
		return
	}
	if p.text == "" || stepKey(text) != stepKey(p.text) {
		p.finishLocked("✓", p.cs.Green)
		p.start, p.frame = p.now(), 0
		p.startTicker()
	}
	p.text = text
	p.drawLocked()
}

// Warn says msg on a line of its own as "warning: msg", above the step
// under way, which is drawn again below it. With --json nothing is said
// (stderr holds only an error).
func (p *Progress) Warn(msg string) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.text != "" {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
	fmt.Fprintf(p.w, "warning: %s\n", msg)
	if p.tty && p.text != "" {
		p.drawLocked()
	}
}

// Output shows a line of the step's own output (a prepare script's),
// dimmed and indented under it, on a terminal only: elsewhere the task
// directory's log keeps it.
func (p *Progress) Output(line string) {
	if p.off || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\x1b[2K  %s\n", p.cs.Dim(Safe(line)))
	if p.text != "" {
		p.drawLocked()
	}
}

// Done ends the step under way, as finished (ok) or failed, and stops
// redrawing. Calling it again does nothing.
func (p *Progress) Done(ok bool) {
	if ok {
		p.end("✓", p.cs.Green)
	} else {
		p.end("✗", p.cs.Red)
	}
}

// Kept ends the step under way as one that left something as it was (a
// task directory kept): neither done nor failed.
func (p *Progress) Kept() { p.end("-", p.cs.Yellow) }

// flushHeldLocked prints the news of the step under way that the once a
// second bound held back.
func (p *Progress) flushHeldLocked() {
	if p.held != "" {
		fmt.Fprintf(p.w, "• %s\n", p.held)
		p.held = ""
	}
}

// end finishes the step under way with mark, and stops redrawing.
func (p *Progress) end(mark string, paint func(string) string) {
	if p.off {
		return
	}
	if !p.tty {
		p.mu.Lock()
		p.flushHeldLocked()
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	p.finishLocked(mark, paint)
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// startTicker turns the spinner every p.every until Done.
func (p *Progress) startTicker() {
	if p.stop != nil || p.every == 0 {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}(p.stop, p.done)
}

// tick draws the next spinner frame and the elapsed time.
func (p *Progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.text == "" {
		return
	}
	p.frame++
	p.drawLocked()
}

// drawLocked replaces the terminal's current line with the step under way.
func (p *Progress) drawLocked() {
	frame := spin.Frames[p.frame%len(spin.Frames)]
	p.lineLocked(frame + " " + p.text + " " + elapsed(p.now().Sub(p.start)))
}

// finishLocked leaves the step under way as a line of its own, marked.
func (p *Progress) finishLocked(mark string, paint func(string) string) {
	if p.text == "" {
		return
	}
	line := p.text + " (" + elapsed(p.now().Sub(p.start)) + ")"
	if p.width > 0 {
		line = ansi.Truncate(line, p.width-3, "…")
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s %s\n", paint(mark), line)
	p.text = ""
}

// lineLocked writes s over the current line, cut to the terminal's width
// so that it never wraps (a wrapped line could not be redrawn in place).
func (p *Progress) lineLocked(s string) {
	if p.width > 0 {
		s = ansi.Truncate(s, p.width-1, "…")
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s", s)
}

// stepKey is what names a step: its text before any " (detail)".
func stepKey(text string) string {
	key, _, _ := strings.Cut(text, " (")
	return key
}

// elapsed is a step's duration for people: tenths under a minute.
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
