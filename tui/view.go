package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"
)

// The smallest terminal the view lays out in; below it, it says so.
const (
	minWidth  = 60
	minHeight = 12
)

// layout is how many lines each part of the screen gets: a title line,
// the three panes (each a title, a header and rows; the events pane has
// no header), an open dialog, and the footer (as many lines as its key
// hints take). They add up to exactly the terminal's height, so nothing
// scrolls the title away.
type layout struct {
	hosts, envs, dialog, events int
	footer                      []string
}

func (m *Model) layout() layout {
	l := layout{footer: m.footer()}
	avail := m.height - 1 - len(l.footer)
	if m.dlg != nil {
		l.dialog = min(len(m.dialogLines(m.width)), avail)
	}
	l.events = max(3, avail/4) - l.dialog
	if l.events < 2 {
		l.events = 0
	}
	rest := max(0, avail-l.events-l.dialog)
	needH, needE := max(3, len(m.hosts.ids)+2), max(3, len(m.envs.ids)+2)
	l.hosts = min(needH, max(3, rest/3), rest)
	l.envs = rest - l.hosts
	if l.envs > needE {
		// Room to spare below: the hosts get it first, then the events.
		give := min(l.envs-needE, needH-l.hosts)
		l.hosts += give
		l.envs -= give
		if l.events > 0 || l.dialog == 0 {
			l.events += l.envs - needE
			l.envs = needE
		}
	}
	return l
}

// View draws the whole screen, clipped to the terminal. A panic here is
// kept, and the next message quits the view.
func (m *Model) View() (v string) {
	defer func() {
		if r := recover(); r != nil {
			m.crash, v = recovered(r), "kandev-exec watch crashed; closing"
		}
	}()
	if m.crash != nil {
		return "kandev-exec watch crashed; closing"
	}
	if !m.ready {
		return "kandev-exec watch: starting"
	}
	if m.width < minWidth || m.height < minHeight {
		msg := fmt.Sprintf("kandev-exec watch: the terminal is too small (%dx%d); it needs at least %dx%d. q quits.",
			m.width, m.height, minWidth, minHeight)
		return strings.Join(pad(wrap(msg, m.width), m.height), "\n")
	}
	switch {
	case m.help:
		return m.helpView()
	case m.detail != nil:
		return m.detailView()
	}
	l := m.layout()
	out := make([]string, 0, m.height)
	out = append(out, m.titleLine())
	out = append(out, m.hostsPane(l.hosts)...)
	out = append(out, m.envsPane(l.envs)...)
	if m.dlg != nil {
		// A dialog taller than the room keeps its last lines: the
		// question and the answer being typed.
		d := m.dialogLines(m.width)
		out = append(out, d[len(d)-l.dialog:]...)
	}
	out = append(out, m.eventsPane(l.events)...)
	out = append(out, l.footer...)
	return strings.Join(out, "\n")
}

// titleLine: what is shown, and how fresh it is.
func (m *Model) titleLine() string {
	left := "kandev-exec watch"
	if s := m.opts.Scope; s.Host != "" {
		left += "  host " + s.Host
	} else if s.Task != "" {
		left += "  task " + s.Task
	}
	if m.opts.Actions == nil {
		left += "  read-only"
	}
	if m.filter != "" {
		left += "  filter " + fmt.Sprintf("%q", m.filter)
	}
	var right []string
	if n := len(m.running); n > 0 {
		right = append(right, fmt.Sprintf("%d running", n))
	}
	right = append(right, m.freshness(), m.clock(m.now))
	r := strings.Join(right, "  ")
	pad := m.width - ansi.StringWidth(left) - ansi.StringWidth(r)
	if pad < 1 {
		return clip(m.st.title.Render(left)+" "+r, m.width)
	}
	return m.st.title.Render(left) + strings.Repeat(" ", pad) + r
}

// freshness says whether what is shown is what is on disk: "live" when
// the last read succeeded, else how long ago it did and why not since.
func (m *Model) freshness() string {
	switch {
	case m.readErr != nil && m.lastRead.IsZero():
		return m.st.tone(toneBad, "CANNOT READ THE STORE: "+firstLine(m.readErr.Error()))
	case m.readErr != nil:
		return m.st.tone(toneBad, fmt.Sprintf("STALE %s: %s", short(m.now.Sub(m.lastRead)), firstLine(m.readErr.Error())))
	case !m.loaded:
		return "reading"
	case m.journalErr != nil:
		return m.st.tone(toneWarn, "journal unreadable: re-reading every 1s")
	}
	return fmt.Sprintf("live seq %d", m.cursor.Seq)
}

func (m *Model) paneTitle(p pane, name string, shown, total int) string {
	t := fmt.Sprintf("%s %d", name, total)
	if shown != total {
		t = fmt.Sprintf("%s %d of %d", name, shown, total)
	}
	if m.focus == p {
		return m.st.focus.Render("[" + t + "]")
	}
	return m.st.dim.Render(" " + t + " ")
}

func (m *Model) hostsPane(h int) []string {
	return m.tablePane(h, paneHosts, "HOSTS", hostCols, hostStatusCol, &m.hosts, m.w.hostCells)
}

func (m *Model) envsPane(h int) []string {
	return m.tablePane(h, paneEnvs, "ENVIRONMENTS", envCols, envPhaseCol, &m.envs, m.w.envCells)
}

// tablePane is a pane of rows: its title, the column header, and the
// rows of l from its top that fit in h lines, the state column painted.
func (m *Model) tablePane(h int, p pane, title string, cols []column, stateCol int, l *list, cells func(string, time.Time) ([]string, tone)) []string {
	ws := fit(cols, m.width)
	out := []string{m.paneTitle(p, title, len(l.ids), l.total), clip(header(m.st, ws, cols), m.width)}
	if len(l.ids) == 0 {
		out = append(out, m.st.dim.Render(clip(m.emptyText(p), m.width)))
	}
	for i := l.top; i < len(l.ids) && i < l.top+h-2; i++ {
		id := l.ids[i]
		cs, t := cells(id, m.now)
		out = append(out, clip(line(m.st, ws, cs, id == l.sel, m.focus == p, stateCol, t), m.width))
	}
	return pad(out, h)
}

func (m *Model) emptyText(p pane) string {
	switch {
	case m.filter != "":
		return fmt.Sprintf("  nothing matches %q (esc clears the filter)", m.filter)
	case !m.loaded:
		return "  reading the store"
	case p == paneHosts && m.opts.Scope.Host != "":
		return "  host " + m.opts.Scope.Host + " is not in the store"
	case p == paneHosts:
		return "  no hosts yet: kandev-exec host add NAME --alias ALIAS"
	case m.opts.Scope.Task != "":
		return "  task " + m.opts.Scope.Task + " is not in the store"
	}
	return "  no task environments yet: kandev-exec task launch --profile P"
}

func (m *Model) eventsPane(h int) []string {
	if h <= 0 {
		return nil
	}
	rows := h - 1
	var picked []*event
	skip := m.evScroll
	for i := m.events.n - 1; i >= 0 && len(picked) < rows; i-- {
		e := m.events.at(i)
		if !m.visibleEvent(e) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		picked = append(picked, e)
	}
	name := "EVENTS"
	if m.evScroll > 0 {
		name = fmt.Sprintf("EVENTS (%d newer below)", m.evScroll)
	}
	if !m.claims {
		name += ", claim events hidden: C shows them"
	}
	title := m.st.dim.Render(" " + name + " ")
	if m.focus == paneEvents {
		title = m.st.focus.Render("[" + name + "]")
	}
	out := []string{title}
	switch {
	case len(picked) > 0:
	case m.filter != "":
		out = append(out, m.st.dim.Render(clip(fmt.Sprintf("  no event matches %q", m.filter), m.width)))
	default:
		out = append(out, m.st.dim.Render("  no events yet"))
	}
	for i := len(picked) - 1; i >= 0; i-- {
		out = append(out, clip("  "+m.eventLine(picked[i]), m.width))
	}
	return pad(out, h)
}

// eventText is an event as one plain line.
func (m *Model) eventText(e *event) string {
	s := m.clock(e.at) + " " + cell(e.typ, 20)
	if sub := e.subject(); sub != "" {
		s += " " + sub
	}
	if e.detail != "" {
		s += "  " + e.detail
	}
	return s
}

// eventLine is eventText with its type painted by tone.
func (m *Model) eventLine(e *event) string {
	s := m.clock(e.at) + " " + m.st.tone(e.tone, cell(e.typ, 20))
	if sub := e.subject(); sub != "" {
		s += " " + sub
	}
	if e.detail != "" {
		s += "  " + e.detail
	}
	return s
}

// eventCount is how many events the scope and filter keep.
func (m *Model) eventCount() int {
	n := 0
	for i := 0; i < m.events.n; i++ {
		if m.visibleEvent(m.events.at(i)) {
			n++
		}
	}
	return n
}

// footer is the line or lines under the panes: the filter being typed, a
// flashed message, else the focused pane's keys, each hint whole: they
// wrap rather than run off a narrow terminal.
func (m *Model) footer() []string {
	switch {
	case m.filtering:
		return []string{clip(m.filterIn.View()+m.st.dim.Render("   enter keeps, esc clears"), m.width)}
	case m.flashMsg != "":
		lines := wrap(m.flashMsg, m.width)
		for i, l := range lines {
			lines[i] = m.st.tone(toneWarn, clip(l, m.width))
		}
		return lines
	}
	if c := m.hints; c.lines != nil && c.width == m.width && c.focus == m.focus {
		return c.lines
	}
	var lines []string
	var cur string
	curW := 0
	for _, b := range m.keys.footer(m.focus) {
		if !b.Enabled() {
			continue
		}
		h := b.Help()
		w := ansi.StringWidth(h.Key) + 1 + ansi.StringWidth(h.Desc)
		if curW > 0 && curW+2+w > m.width {
			lines, cur, curW = append(lines, cur), "", 0
		}
		if curW > 0 {
			cur, curW = cur+"  ", curW+2
		}
		cur, curW = cur+m.st.header.Render(h.Key)+" "+h.Desc, curW+w
	}
	m.hints = keyHints{width: m.width, focus: m.focus, lines: append(lines, clip(cur, m.width))}
	return m.hints.lines
}

// keyHints are the footer's key hints as last wrapped: layout and View
// both need them on every update and frame.
type keyHints struct {
	width int
	focus pane
	lines []string
}

func (m *Model) helpModel() help.Model {
	h := help.New()
	h.Ellipsis = "~"
	plain := m.st.r.NewStyle()
	h.Styles = help.Styles{Ellipsis: plain, FullKey: m.st.header, FullDesc: plain, FullSeparator: plain}
	return h
}

// helpView lists every key, from the bindings the view dispatches on.
func (m *Model) helpView() string {
	h := m.helpModel()
	h.Width = m.width
	body := []string{m.st.title.Render("kandev-exec watch: keys"), ""}
	for i, row := range m.keys.groups() {
		if i > 0 {
			body = append(body, "")
		}
		body = append(body, strings.Split(h.FullHelpView(row), "\n")...)
	}
	body = append(body, "")
	if m.opts.Actions == nil {
		body = append(body, "Read-only: the action keys are off.")
	} else {
		body = append(body, wrap("Every action names its target and its effect before it runs. y confirms, never enter; "+
			"quarantine and archive ask for the host or task name to be typed.", m.width)...)
	}
	body = append(body, "", "esc or ? closes this help.")
	for i := range body {
		body[i] = clip(body[i], m.width)
	}
	return strings.Join(pad(body, m.height), "\n")
}

func (m *Model) detailView() string {
	d := m.detail
	title := m.st.title.Render(d.kind+" "+d.id) + m.st.dim.Render(fmt.Sprintf("   %d%%", int(d.vp.ScrollPercent()*100)))
	foot := m.st.dim.Render("j/k scroll  esc back  ? help  q quit")
	return strings.Join([]string{clip(title, m.width), d.vp.View(), clip(foot, m.width)}, "\n")
}

// pad fills lines up to exactly h lines, cutting any beyond.
func pad(lines []string, h int) []string {
	if h <= 0 {
		return nil
	}
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}
