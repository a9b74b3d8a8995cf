// Package logview shapes a session log for `session logs`: its last N
// lines, the lines not provably older than a cutoff, and a time before
// each line.
//
// The log is a byte stream in which only the controller's own lines carry
// a time ("[controller] <RFC 3339> ..."); the agent's output carries none.
// So what a time can mean is limited, and this package says so rather
// than invent one:
//
//   - a [controller] line is dated by its own time;
//   - a line that arrives while following, after the backlog, is dated by
//     when it arrived here (the controller sends new output within a
//     fraction of a second);
//   - any other line of agent output has no known time ("-").
//
// --since hides only lines proven older than the cutoff: those up to the
// last [controller] line older than it (the log is written in order, so
// everything before that line is older still). The rest is shown, the
// undated lines after it included, since they may be newer.
package logview

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// MaxHeld bounds what the view holds back while it cannot yet decide:
// the tail's lines, or lines a later [controller] line may prove old.
// Past it the oldest held lines are dropped, and a first line says how
// many bytes ("[kandev-exec] N bytes before this line not shown: ...").
const MaxHeld = 8 << 20

// Options say what to show. Backlog is how many bytes of the stream were
// in the log before the view began: the rest arrives live (for a stream
// that does not follow, all of it is backlog).
type Options struct {
	Tail       int       // only the backlog's last Tail lines; 0 = all
	Since      time.Time // hide lines proven older; zero = none
	Timestamps bool      // prefix each line with its time, or "-"
	Backlog    int64
	// Partial: the stream starts inside the log, not at its start, so its
	// first line is a fragment and is skipped.
	Partial bool
	Now     func() time.Time // the arrival clock; nil = time.Now
}

// stampWidth is the width of "2006-01-02T15:04:05Z".
const stampWidth = 20

// Writer applies Options to the log bytes written to it and writes the
// result to the underlying writer. Close flushes what it holds.
type Writer struct {
	w       io.Writer
	o       Options
	seen    int64    // stream bytes consumed
	line    []byte   // the backlog line being assembled
	held    [][]byte // backlog lines awaiting a decision, each with its prefix
	heldLen int
	dropped int64 // bytes of backlog dropped for MaxHeld
	live    bool  // past the backlog: stream through
	midLine bool  // live output stopped in the middle of a line
}

// New returns a view writing to w.
func New(w io.Writer, o Options) *Writer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Writer{w: w, o: o}
}

// Dropped is how many bytes of backlog were not shown because holding
// them would have passed MaxHeld.
func (v *Writer) Dropped() int64 { return v.dropped }

func (v *Writer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !v.live {
		room := v.o.Backlog - v.seen
		chunk := p
		if int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		v.backlog(chunk)
		v.seen += int64(len(chunk))
		p = p[len(chunk):]
		if v.seen >= v.o.Backlog {
			if err := v.flush(); err != nil {
				return 0, err
			}
			v.live = true
		}
	}
	if len(p) > 0 {
		v.seen += int64(len(p))
		if err := v.writeLive(p); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Close shows what is held: the backlog of a stream that ended before it
// was all read (or that does not follow).
func (v *Writer) Close() error {
	if v.live {
		return nil
	}
	v.live = true
	return v.flush()
}

// backlog splits p into lines and decides on each complete one.
func (v *Writer) backlog(p []byte) {
	if v.o.Partial {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return
		}
		v.o.Partial, p = false, p[i+1:]
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			v.line = append(v.line, p...)
			return
		}
		v.line = append(v.line, p[:i+1]...)
		v.take(v.line)
		v.line = nil
		p = p[i+1:]
	}
}

// take decides on one backlog line: dropped when a [controller] line
// older than the cutoff proves it and all before it old, else held for
// the tail or the end of the backlog.
func (v *Writer) take(line []byte) {
	at, dated := ControllerTime(line)
	if dated && !v.o.Since.IsZero() && at.Before(v.o.Since) {
		v.held, v.heldLen = nil, 0
		return
	}
	stamp := "-"
	if dated {
		stamp = Stamp(at)
	}
	v.hold(v.prefixed(stamp, line))
}

func (v *Writer) hold(line []byte) {
	v.held = append(v.held, line)
	v.heldLen += len(line)
	for len(v.held) > 1 && (v.heldLen > MaxHeld || (v.o.Tail > 0 && len(v.held) > v.o.Tail)) {
		if v.heldLen > MaxHeld {
			v.dropped += int64(len(v.held[0]))
		}
		v.heldLen -= len(v.held[0])
		v.held = v.held[1:]
	}
}

// flush ends the backlog: the line in progress is taken as it is, and
// the held lines are written.
func (v *Writer) flush() error {
	if len(v.line) > 0 {
		v.take(v.line) // the rest of this line arrives live, unstamped
		v.line, v.midLine = nil, true
	}
	if v.dropped > 0 {
		note := fmt.Sprintf("[kandev-exec] %d bytes before this line not shown: more than %d MiB would have had to be held back\n", v.dropped, MaxHeld>>20)
		if _, err := io.WriteString(v.w, note); err != nil {
			return err
		}
	}
	for _, l := range v.held {
		if _, err := v.w.Write(l); err != nil {
			return err
		}
	}
	v.held, v.heldLen = nil, 0
	return nil
}

// writeLive passes live output through, stamping each line as it begins.
func (v *Writer) writeLive(p []byte) error {
	if !v.o.Timestamps {
		_, err := v.w.Write(p)
		return err
	}
	var out []byte
	for len(p) > 0 {
		if !v.midLine {
			out = append(out, pad(Stamp(v.o.Now()))...)
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			out = append(out, p...)
			v.midLine = true
			break
		}
		out = append(out, p[:i+1]...)
		v.midLine = false
		p = p[i+1:]
	}
	_, err := v.w.Write(out)
	return err
}

func (v *Writer) prefixed(stamp string, line []byte) []byte {
	if !v.o.Timestamps {
		return line
	}
	return append([]byte(pad(stamp)), line...)
}

func pad(stamp string) string { return fmt.Sprintf("%-*s ", stampWidth, stamp) }

// Stamp is how a time is shown: RFC 3339, UTC, to the second.
func Stamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

var controllerPrefix = []byte("[controller] ")

// ControllerTime reads the time of a line the controller wrote
// ("[controller] 2006-01-02T15:04:05.000Z ..."). Agent output that
// imitates one is taken for one: the log cannot tell them apart.
func ControllerTime(line []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(line, controllerPrefix)
	if !ok {
		return time.Time{}, false
	}
	field, _, _ := bytes.Cut(rest, []byte(" "))
	t, err := time.Parse(time.RFC3339Nano, string(field))
	return t, err == nil
}
