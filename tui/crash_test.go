package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kdlbs/kandev-exec/state"
)

type panickyActions struct{ fakeActions }

func (panickyActions) Cordon(context.Context, string, string) error { panic("cordon exploded") }

type explodingError struct{}

func (explodingError) Error() string { panic("error exploded") }

type explodingActions struct{ fakeActions }

func (explodingActions) Uncordon(context.Context, string) error { return explodingError{} }

// A panic in an action is that action's failure; the view goes on.
func TestPanickingActionFailsAndTheViewGoesOn(t *testing.T) {
	m := ready(t, teardownStore(t), panickyActions{})
	cmds := press(m, runes("c"), runes("x"), enter, runes("y"))
	finish(t, m, cmds[0])
	if m.crash != nil {
		t.Fatalf("crashed: %v", m.crash)
	}
	if got := lastNote(m); got != "cordon host web-1: failed: panic: cordon exploded" {
		t.Fatalf("note %q", got)
	}
}

// A panic in Update quits the view (restoring the terminal) and Run
// returns it; bubbletea's own kill path is never taken.
func TestPanicInUpdateQuits(t *testing.T) {
	m := ready(t, teardownStore(t), explodingActions{})
	cmds := press(m, runes("u"), runes("y"))
	model, cmd := m.Update(cmds[0]())
	if model != m {
		t.Fatalf("Update returned %v after a panic: bubbletea would render a nil model", model)
	}
	if m.crash == nil || !strings.Contains(m.crash.Error(), "panic: error exploded") {
		t.Fatalf("crash %v", m.crash)
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("no quit after a panic in Update")
	}
}

// A panic in View is kept, and the next message (the heartbeat at the
// latest) quits.
func TestPanicInViewQuitsOnTheNextMessage(t *testing.T) {
	m := ready(t, teardownStore(t), nil)
	m.hosts.ids = append(m.hosts.ids, "ghost") // a row with no record: a bug
	m.hosts.top = 0
	if v := m.View(); v != "kandev-exec watch crashed; closing" || m.crash == nil {
		t.Fatalf("view %q, crash %v", v, m.crash)
	}
	_, cmd := m.Update(beatMsg{})
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("no quit after a panic in View")
	}
}

type panickyStore struct{ *state.FileStore }

func (panickyStore) List(context.Context, state.Kind) ([]state.Record, error) { panic("list exploded") }

// A panicking read is a failed read: what is shown stays, marked stale.
func TestPanickingReadLeavesTheViewStale(t *testing.T) {
	fs := teardownStore(t)
	ps := &switchable{Store: fs}
	clock := t0
	o := options(ps, nil)
	o.Now = func() time.Time { return clock }
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.loadCmd("start")())
	ps.Store = panickyStore{fs}
	clock = clock.Add(3 * time.Second)
	m.Update(m.loadCmd("resync")())
	m.Update(beatMsg{})
	if m.crash != nil || len(m.w.hosts) != 4 {
		t.Fatalf("crash %v, %d hosts", m.crash, len(m.w.hosts))
	}
	var pe *panicError
	if !errors.As(m.readErr, &pe) || !strings.Contains(m.titleLine(), "STALE 3s: panic: list exploded") {
		t.Fatalf("title %q", m.titleLine())
	}
}

// switchable reads through Store, which a test swaps.
type switchable struct{ Store }

// A store that cannot be read from the start says so, not an age.
func TestUnreadableStoreFromTheStart(t *testing.T) {
	m := New(options(&switchable{Store: panickyStore{teardownStore(t)}}, nil))
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.loadCmd("start")())
	if got := m.titleLine(); !strings.Contains(got, "CANNOT READ THE STORE: panic: list exploded") {
		t.Fatalf("title %q", got)
	}
}
