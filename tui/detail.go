package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	"github.com/charmbracelet/lipgloss"

	"github.com/kdlbs/kandev-exec/internal/termsafe"
	"github.com/kdlbs/kandev-exec/records"
)

// detailEvents is how many recent events the detail view lists.
const detailEvents = 30

// detail is the full record of one host or task and its recent events,
// rebuilt when they change.
type detail struct {
	kind string // "host" or "task"
	id   string
	vp   viewport.Model
	text string
}

func (m *Model) openDetail() {
	var d *detail
	switch m.focus {
	case paneHosts:
		if m.hosts.sel != "" {
			d = &detail{kind: "host", id: m.hosts.sel}
		}
	case paneEnvs:
		if m.envs.sel != "" {
			d = &detail{kind: "task", id: m.envs.sel}
		}
	}
	if d == nil {
		m.flash("select a host or a task first")
		return
	}
	d.vp = viewport.New(m.width, max(1, m.height-2))
	d.vp.Style = m.st.r.NewStyle()
	m.detail = d
	m.refreshDetail()
}

func (d *detail) resize(w, h int) {
	d.vp.Width, d.vp.Height = w, max(1, h-2)
}

// refreshDetail rebuilds an open detail view. The viewport re-measures
// its content on every SetContent, so it is only set when the text
// changed.
func (m *Model) refreshDetail() {
	d := m.detail
	if d == nil {
		return
	}
	if text := m.detailText(d); text != d.text {
		d.text = text
		d.vp.SetContent(text)
	}
}

func (m *Model) detailText(d *detail) string {
	var b strings.Builder
	sayIn := func(st lipgloss.Style, format string, a ...any) {
		for _, l := range wrap(fmt.Sprintf(format, a...), max(20, m.width-2)) {
			b.WriteString(st.Render(l) + "\n")
		}
	}
	say := func(format string, a ...any) { sayIn(m.st.r.NewStyle(), format, a...) }
	pretty := func(title string, v any) {
		j, _ := json.MarshalIndent(v, "", "  ")
		b.WriteString("\n" + title + ":\n" + termsafe.Text(string(j)) + "\n")
	}
	switch d.kind {
	case "host":
		h := m.w.hosts[d.id]
		if h == nil {
			say("host %s is gone from the store.", d.id)
			break
		}
		cells, _ := m.w.hostCells(d.id, m.now)
		say("status %s, reason %s, by %s, for %s, TTL %s", cells[1], cells[2], cells[3], cells[4], cells[5])
		say("%d sessions running, %d tasks in cleanup_pending", m.w.running[d.id], m.w.pending[d.id])
		pretty("record", h)
	case "task":
		t := m.w.tasks[d.id]
		if t == nil {
			say("task %s is gone from the store.", d.id)
			break
		}
		cells, _ := m.w.envCells(d.id, m.now)
		say("%s on %s, phase %s", cells[1], t.Host, t.Phase)
		if td := t.Teardown; td != nil {
			say("teardown (%s): step %s, drain %s, receipts %s, reclaim %s", td.Trigger, dash(td.Step),
				dash(string(td.Drain)), dash(termsafe.Line(strings.Join(td.Receipts, " "))), dash(string(td.Reclaim)))
			// The reason is why a teardown stopped in cleanup_pending, else a note.
			switch _, note := m.w.envError(d.id); {
			case note != "":
				sayIn(m.st.dim, "note: %s", termsafe.Line(note))
			case td.Reason != "":
				say("error: %s", termsafe.Line(td.Reason))
			}
		}
		if j := m.w.job(d.id); j != nil {
			say("cleanup job: %s, attempt %s, next %s, last error: %s", j.State, cells[7], cells[8], dash(termsafe.Line(j.LastError)))
		}
		for _, sid := range t.Sessions {
			if s := m.w.sessions[sid]; s != nil {
				say("session %s: %s", sid, s.State)
			}
		}
		pretty("record", masked(t))
		if j := m.w.job(d.id); j != nil {
			pretty("cleanup job record", j)
		}
	}
	b.WriteString("\nrecent events:\n")
	var lines []string
	for i := m.events.n - 1; i >= 0 && len(lines) < detailEvents; i-- {
		e := m.events.at(i)
		if e.claim && !m.claims {
			continue
		}
		if (d.kind == "host" && e.host == d.id) || (d.kind == "task" && e.task == d.id) {
			lines = append(lines, m.eventText(e))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintf(&b, "  none in the last %d events\n", ringCap)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString("  " + lines[i] + "\n")
	}
	return b.String()
}

// masked is the task as the detail view prints it: the values of its
// --env literals hidden (`task show` prints none of them), their keys
// kept.
func masked(t *records.Task) *records.Task {
	c := *t
	c.LaunchEnv = make([]string, len(t.LaunchEnv))
	for i, kv := range t.LaunchEnv {
		k, _, _ := strings.Cut(kv, "=")
		c.LaunchEnv[i] = k + "=***"
	}
	return &c
}
