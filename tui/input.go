package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// key dispatches a key to whatever has the focus: an open dialog, the
// filter line, the help or detail view, else the panes.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	m.flashMsg = ""
	if k.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	switch {
	case m.dlg != nil:
		return m.dialogKey(k)
	case m.filtering:
		return m.filterKey(k)
	case m.help:
		switch {
		case key.Matches(k, m.keys.Quit):
			return m.quit()
		case key.Matches(k, m.keys.Help, m.keys.ClearFilter):
			m.help = false
		}
		return nil
	case m.detail != nil:
		switch {
		case key.Matches(k, m.keys.Quit):
			return m.quit()
		case key.Matches(k, m.keys.ClearFilter, m.keys.Detail):
			m.detail = nil
		case key.Matches(k, m.keys.Help):
			m.help = true
		default:
			var cmd tea.Cmd
			m.detail.vp, cmd = m.detail.vp.Update(k)
			return cmd
		}
		return nil
	}
	switch {
	case key.Matches(k, m.keys.Quit):
		return m.quit()
	case key.Matches(k, m.keys.Help):
		m.help = true
	case key.Matches(k, m.keys.Filter):
		m.filtering = true
		m.filterIn.SetValue(m.filter)
		m.filterIn.CursorEnd()
		m.filterIn.Focus()
	case key.Matches(k, m.keys.ClearFilter):
		if m.filter != "" {
			m.filter = ""
			m.refilter()
		}
	case key.Matches(k, m.keys.Claims):
		m.claims = !m.claims
		m.evScroll = 0
	case key.Matches(k, m.keys.NextPane):
		m.focus = (m.focus + 1) % panes
	case key.Matches(k, m.keys.PrevPane):
		m.focus = (m.focus + panes - 1) % panes
	case key.Matches(k, m.keys.Up):
		m.moveSel(-1)
	case key.Matches(k, m.keys.Down):
		m.moveSel(1)
	case key.Matches(k, m.keys.PageUp):
		m.moveSel(-m.page())
	case key.Matches(k, m.keys.PageDown):
		m.moveSel(m.page())
	case key.Matches(k, m.keys.Top):
		m.moveSel(-1 << 30)
	case key.Matches(k, m.keys.Bottom):
		m.moveSel(1 << 30)
	case key.Matches(k, m.keys.Detail):
		m.openDetail()
	case key.Matches(k, m.keys.Cordon):
		m.open(actCordon)
	case key.Matches(k, m.keys.Uncordon):
		m.open(actUncordon)
	case key.Matches(k, m.keys.Drain):
		m.open(actDrain)
	case key.Matches(k, m.keys.Quarantine):
		m.open(actQuarantine)
	case key.Matches(k, m.keys.Readmit):
		m.open(actReadmit)
	case key.Matches(k, m.keys.Archive):
		m.open(actArchive)
	case key.Matches(k, m.keys.Sweep):
		m.open(actSweep)
	}
	return nil
}

// quit asks first while actions are still running.
func (m *Model) quit() tea.Cmd {
	if len(m.running) > 0 {
		m.detail, m.help = nil, false
		m.dlg = &dialog{req: request{act: actQuit}, spec: specs[actQuit]}
		return nil
	}
	return tea.Quit
}

func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEnter:
		m.filtering = false
		return nil
	case tea.KeyEsc:
		m.filtering = false
		m.filter = ""
		m.refilter()
		return nil
	}
	var cmd tea.Cmd
	m.filterIn, cmd = m.filterIn.Update(k)
	if v := m.filterIn.Value(); v != m.filter {
		m.filter = v
		m.refilter()
	}
	return cmd
}

func (m *Model) moveSel(n int) {
	switch m.focus {
	case paneHosts:
		m.hosts.move(n)
	case paneEnvs:
		m.envs.move(n)
	case paneEvents:
		// Up scrolls back through older events.
		m.evScroll = max(0, min(m.evScroll-n, m.eventCount()-1))
	}
}

// page is a page of the focused pane.
func (m *Model) page() int {
	if !m.ready {
		return 1
	}
	l := m.layout()
	switch m.focus {
	case paneHosts:
		return max(1, l.hosts-2)
	case paneEnvs:
		return max(1, l.envs-2)
	}
	return max(1, l.events-1)
}
