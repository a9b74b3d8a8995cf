package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/termsafe"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Field is one key=value of an event's detail.
type Field struct{ Key, Value string }

// Fields lists an event detail's non-empty fields in the order people
// read them; times are written by at. The view and the plain stream of
// `watch --no-tui` both print these, so a line means the same in both.
func Fields(d records.Detail, at func(time.Time) string) []Field {
	var fs []Field
	add := func(k, v string) {
		if v != "" {
			fs = append(fs, Field{k, v})
		}
	}
	add("phase", d.Phase)
	add("step", d.Step)
	add("outcome", d.Outcome)
	add("method", d.Method)
	add("receipt", d.Receipt)
	add("reason", d.Reason)
	add("by", d.By)
	if d.Until != nil {
		add("until", at(*d.Until))
	}
	if d.Attempts > 0 {
		add("attempts", strconv.Itoa(d.Attempts))
	}
	if d.NextAt != nil {
		add("next_at", at(*d.NextAt))
	}
	add("error", d.Error)
	add("message", d.Message)
	return fs
}

// FormatFields writes fields as key=value, quoting a value that holds a
// space, a quote or an equals sign (strconv.Quote escapes any control),
// and escaping controls in the rest: a host's text never reaches the
// terminal raw.
func FormatFields(fs []Field) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Key)
		b.WriteByte('=')
		if strings.ContainsAny(f.Value, " \"=\\") {
			b.WriteString(strconv.Quote(f.Value))
		} else {
			b.WriteString(termsafe.Line(f.Value))
		}
	}
	return b.String()
}

// ringCap bounds the events pane: a long journal never grows the view,
// and a frame never measures more lines than it shows.
const ringCap = 1000

// event is one line of the events pane: a journal entry, or a note of
// the view's own (an action's progress, a re-read).
type event struct {
	at      time.Time
	seq     uint64 // 0 for a note
	kind    state.Kind
	name    string
	typ     string
	host    string
	task    string
	session string
	detail  string // FormatFields of the detail, or the note
	tone    tone
	lower   string // for the filter
	claim   bool   // a claim taken or given back: hidden unless asked
}

// ring is a fixed-size buffer of the newest events.
type ring struct {
	buf   []event
	start int // index of the oldest
	n     int
}

func newRing(n int) *ring { return &ring{buf: make([]event, n)} }

func (r *ring) push(e event) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

// at is the i-th oldest event.
func (r *ring) at(i int) *event { return &r.buf[(r.start+i)%len(r.buf)] }

func (r *ring) reset() { r.start, r.n = 0, 0 }

// eventOf renders a journal entry once, when it arrives.
func eventOf(e state.Entry, w *world, clock func(time.Time) string) event {
	d := records.DetailOf(e)
	ev := event{at: e.At, seq: e.Seq, kind: e.Kind, name: e.Name, typ: e.Type}
	ev.host, ev.task = records.About(e, d)
	if e.Kind == records.KindSession {
		ev.session = e.Name
		if s := w.sessions[e.Name]; s != nil {
			ev.host, ev.task = or(ev.host, s.Host), or(ev.task, s.TaskID)
		}
	}
	if ev.host == "" && ev.task != "" {
		if t := w.tasks[ev.task]; t != nil {
			ev.host = t.Host
		}
	}
	ev.detail = FormatFields(Fields(d, clock))
	ev.tone = eventTone(e.Type, d)
	ev.lower = strings.ToLower(strings.Join([]string{e.Type, string(e.Kind), e.Name, ev.host, ev.task, ev.detail}, " "))
	ev.claim = IsClaim(e)
	return ev
}

// IsClaim reports whether e is a claim taken or given back. Every verb
// writes a pair of them around its work, so they outnumber the events
// that change something: the view hides them until C, the streams of
// `watch` unless --claims.
func IsClaim(e state.Entry) bool {
	return e.Type == state.EventClaimAcquired || e.Type == state.EventClaimReleased
}

func note(at time.Time, text string, t tone) event {
	text = termsafe.Line(text)
	return event{at: at, typ: "watch", detail: text, tone: t, lower: strings.ToLower("watch " + text)}
}

// subject is what the events pane names: the record, and its host when
// that is another record.
func (e *event) subject() string {
	switch {
	case e.kind == "":
		return ""
	case e.kind == records.KindHost || e.host == "":
		return string(e.kind) + " " + e.name
	}
	return string(e.kind) + " " + e.name + " on " + e.host
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
