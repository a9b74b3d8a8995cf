package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// archiveFirst confirms the archive of the task named first and returns
// the action's command, not yet run.
func archiveFirst(t *testing.T, m *Model) tea.Cmd {
	t.Helper()
	cmds := press(m, tab, down, runes("a"), runes("first"), enter)
	if len(cmds) != 1 || len(m.running) != 1 {
		t.Fatalf("the archive did not start: %d commands, running %v", len(cmds), m.running)
	}
	return cmds[0]
}

// An action's outcome is shown by the read its end starts, after the
// entries it wrote and with the rows they changed: never "done" over a
// row that still shows the old state.
func TestActionOutcomeShowsWithTheRowsItChanged(t *testing.T) {
	st := firstHourStore(t)
	m := ready(t, st, storeActions{st: st, t: t})
	ended := archiveFirst(t, m)()

	_, read := m.Update(ended)
	if read == nil {
		t.Fatal("the action's end started no read")
	}
	if strings.Contains(lastNote(m), "done") || envCell(t, m, "t000000000001", "PHASE") != "ready" {
		t.Fatalf("the outcome %q came before the read of what the action wrote", lastNote(m))
	}
	m.Update(read())
	if got := envCell(t, m, "t000000000001", "PHASE"); got != "archived" || lastNote(m) != "archive task t000000000001: done (action 1)" {
		t.Fatalf("after the read: phase %q, note %q", got, lastNote(m))
	}
	if newest := m.events.at(m.events.n - 1); newest.kind != "" {
		t.Fatalf("the outcome is not after the action's entries: newest is %s %s", newest.typ, newest.name)
	}
}

// A follow waiting for news when an action ends is called off: its
// result is dropped, and the read that replaces it shows the outcome.
func TestActionEndCallsOffAWaitingFollow(t *testing.T) {
	st := firstHourStore(t)
	m := ready(t, st, storeActions{st: st, t: t})
	ended := archiveFirst(t, m)()
	m.Update(m.followCmd(true)()) // the poll chain reads what the action wrote

	waiting := m.followCmd(true) // nothing more is coming
	got := make(chan tea.Msg, 1)
	go func() { got <- waiting() }()
	_, read := m.Update(ended)
	if read == nil {
		t.Fatal("the action's end started no read")
	}
	m.Update(<-got) // returns once called off
	if m.readErr != nil || m.journalErr != nil || strings.Contains(lastNote(m), "done") {
		t.Fatalf("the called-off follow was applied: read error %v, journal error %v, note %q", m.readErr, m.journalErr, lastNote(m))
	}
	m.Update(read())
	if lastNote(m) != "archive task t000000000001: done (action 1)" || m.reading {
		t.Fatalf("after the read: note %q, reading %v", lastNote(m), m.reading)
	}
}
