package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kdlbs/kandev-exec/internal/termsafe"
)

// dialog walks one action from its key to its confirmation. Its target
// is fixed when it opens (by ID, never a row index), and shown on every
// line: a refresh that moves rows under the cursor cannot change what
// the confirmation acts on.
type dialog struct {
	req   request
	spec  spec
	step  int // answers given; len(spec.prompts) is the confirmation
	input textinput.Model
	// accept is what may be typed to confirm a typed confirmation.
	accept []string
	err    string
}

func (m *Model) newInput(placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = placeholder
	in.CharLimit = maxReason
	in.PromptStyle, in.TextStyle = m.st.title, m.st.r.NewStyle()
	in.PlaceholderStyle, in.CompletionStyle = m.st.dim, m.st.dim
	in.Cursor.Style = m.st.selected
	in.Cursor.TextStyle = m.st.r.NewStyle()
	// A blinking cursor would redraw twice a second for nothing.
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Focus()
	return in
}

// open starts the dialog of a on the current selection.
func (m *Model) open(a act) {
	sp := specs[a]
	req := request{act: a}
	switch sp.on {
	case paneHosts:
		if m.focus != paneHosts || m.hosts.sel == "" {
			m.flash(fmt.Sprintf("%s acts on a host: select one in the hosts pane (tab)", sp.verb))
			return
		}
		req.target = m.hosts.sel
	case paneEnvs:
		if m.focus != paneEnvs || m.envs.sel == "" {
			m.flash(fmt.Sprintf("%s acts on a task: select one in the environments pane (tab)", sp.verb))
			return
		}
		req.target = m.envs.sel
	}
	d := &dialog{req: req, spec: sp}
	m.dlg = d
	m.startStep()
}

// startStep prepares the input of the dialog's current step.
func (m *Model) startStep() {
	d := m.dlg
	d.err = ""
	switch {
	case d.step < len(d.spec.prompts):
		p := d.spec.prompts[d.step]
		d.input = m.newInput(p.hint)
		d.input.SetValue(p.def)
	case d.spec.typed:
		d.accept = []string{d.req.target}
		if t := m.w.tasks[d.req.target]; d.req.act == actArchive && t != nil && t.Name != "" {
			d.accept = append(d.accept, t.Name)
		}
		d.input = m.newInput("")
	}
}

// dialogKey handles a key while a dialog is open.
func (m *Model) dialogKey(k tea.KeyMsg) tea.Cmd {
	d := m.dlg
	prompting := d.step < len(d.spec.prompts)
	typing := prompting || d.spec.typed
	switch {
	case k.Type == tea.KeyEsc:
		m.dlg = nil
		m.addNote(d.req.title()+": cancelled", toneDim)
		return nil
	case !typing && key.Matches(k, m.keys.Confirm):
		return m.confirm()
	case !typing && key.Matches(k, m.keys.Cancel):
		m.dlg = nil
		m.addNote(d.req.title()+": cancelled", toneDim)
		return nil
	case !typing:
		d.err = "press y to confirm, n or esc to cancel (enter does not confirm)"
		return nil
	case key.Matches(k, m.keys.Submit) && prompting:
		v, err := d.spec.prompts[d.step].check(d.input.Value())
		if err != nil {
			d.err = err.Error()
			return nil
		}
		d.req.answers = append(d.req.answers, v)
		d.step++
		m.startStep()
		return nil
	case key.Matches(k, m.keys.Submit):
		got := strings.TrimSpace(d.input.Value())
		for _, a := range d.accept {
			if got == a {
				return m.confirm()
			}
		}
		d.err = fmt.Sprintf("type %s exactly to confirm, or esc to cancel", quoted(d.accept[len(d.accept)-1]))
		return nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(k)
	return cmd
}

// confirm runs the dialog's request, unless its target went away
// meanwhile.
func (m *Model) confirm() tea.Cmd {
	req := m.dlg.req
	m.dlg = nil
	switch specs[req.act].on {
	case paneHosts:
		if m.w.hosts[req.target] == nil {
			m.addNote(req.title()+": the host is gone; nothing done", toneWarn)
			return nil
		}
	case paneEnvs:
		if m.w.tasks[req.target] == nil {
			m.addNote(req.title()+": the task is gone; nothing done", toneWarn)
			return nil
		}
	}
	if req.act == actQuit {
		return tea.Quit
	}
	return m.start(req)
}

// effect says what confirming will do, in the words of the records.
func (m *Model) effect(r request) string {
	ans := func(i int) string { return termsafe.Line(r.answers[i]) }
	switch r.act {
	case actCordon:
		return fmt.Sprintf("Cordon host %s: it takes no new launches; its %d running sessions keep running. Reason: %s.",
			r.target, m.w.running[r.target], ans(0))
	case actUncordon:
		return fmt.Sprintf("Uncordon host %s: it takes new launches again.", r.target)
	case actDrain:
		return fmt.Sprintf("Drain host %s: cordon it, then stop its %d running sessions gracefully, waiting at most %s for them.",
			r.target, m.w.running[r.target], ans(0))
	case actQuarantine:
		until := "until readmitted"
		if r.answers[1] != "" {
			until = "for " + ans(1)
		}
		return fmt.Sprintf("Quarantine host %s %s: it takes no launches. Reason: %s.", r.target, until, ans(0))
	case actReadmit:
		return fmt.Sprintf("Readmit host %s: it takes new launches again. Reason: %s.", r.target, ans(0))
	case actArchive:
		t := m.w.tasks[r.target]
		name := ""
		if t.Name != "" {
			name = " (" + termsafe.Line(t.Name) + ")"
		}
		return fmt.Sprintf("Archive task %s%s on %s: drain its sessions, run its cleanup script, and remove its directory if its profile opts in.",
			r.target, name, t.Host)
	case actSweep:
		due := 0
		for _, j := range m.w.jobs {
			if j.Due(m.now) {
				due++
			}
		}
		return fmt.Sprintf("Run a sweep now: every cleanup job that is due is attempted (%d due).", due)
	case actQuit:
		var names []string
		for _, id := range m.runningIDs() {
			names = append(names, m.running[id].title())
		}
		return fmt.Sprintf("Still running: %s. Quitting stops waiting for them; a cleanup job already recorded is retried by `kandev-exec sweep`.",
			strings.Join(names, ", "))
	}
	return ""
}

// dialogLines renders the open dialog in at most width columns.
func (m *Model) dialogLines(width int) []string {
	d := m.dlg
	var body []string
	title := d.req.title()
	body = append(body, m.st.title.Render(strings.ToUpper(title[:1])+title[1:]))
	switch {
	case d.step < len(d.spec.prompts):
		p := d.spec.prompts[d.step]
		body = append(body, fmt.Sprintf("%s for %s (enter accepts, esc cancels):", p.label, d.req.title()))
		body = append(body, d.input.View())
	default:
		body = append(body, wrap(m.effect(d.req), width-4)...)
		if d.spec.typed {
			// Whole, on lines of its own: what the typing must match.
			body = append(body, wrap(m.typePrompt(d), width-4)...)
			body = append(body, d.input.View())
		} else {
			body = append(body, "Press y to confirm, n or esc to cancel.")
		}
	}
	if d.err != "" {
		body = append(body, m.st.tones[toneBad].Render("! "+termsafe.Line(d.err)))
	}
	rule := "+" + strings.Repeat("-", max(0, width-2)) + "+"
	out := []string{rule}
	for _, l := range body {
		out = append(out, "| "+cell(l, max(0, width-4))+" |")
	}
	return append(out, rule)
}

// typePrompt asks for the name a typed confirmation accepts, quoted, and
// says whose name it is.
func (m *Model) typePrompt(d *dialog) string {
	whose := "the host's name"
	if d.req.act == actArchive {
		whose = "the task's ID"
		if len(d.accept) > 1 {
			whose = "the task's name (or its ID)"
		}
	}
	return fmt.Sprintf("To confirm, type %s, %s, and press enter; esc cancels.", whose, quoted(d.accept[len(d.accept)-1]))
}

// quoted is a name as a prompt shows it: in quotes, its controls escaped.
func quoted(s string) string { return `"` + termsafe.Line(s) + `"` }

// wrap breaks text into lines of at most width columns at spaces.
func wrap(s string, width int) []string {
	var out []string
	var cur string
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case ansi.StringWidth(cur)+1+ansi.StringWidth(w) > width:
			out = append(out, cur)
			cur = w
		default:
			cur += " " + w
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
