package tui

import (
	"io"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Colour repeats a state, never carries it alone: with colour on, the
// status word is painted and still there; with colour off (NO_COLOR,
// --no-color) the screen holds no escape at all, and the plain text is
// the same screen.
func TestColourRepeatsTheWordAndNoColourHasNone(t *testing.T) {
	st := teardownStore(t)
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	o := options(st, nil)
	o.Renderer = r
	coloured := New(o)
	plain := New(options(st, nil))
	for _, m := range []*Model{coloured, plain} {
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
		m.Update(m.loadCmd("start")())
	}
	cv, pv := coloured.View(), plain.View()
	if strings.Contains(pv, "\x1b") {
		t.Fatalf("escape in a view without colour: %q", pv)
	}
	if !regexp.MustCompile(`\x1b\[[0-9;]*31[0-9;]*mquarantined`).MatchString(cv) {
		t.Fatalf("quarantined not painted red:\n%q", cv)
	}
	if !regexp.MustCompile(`\x1b\[[0-9;]*7[0-9;]*m> web-1`).MatchString(cv) {
		t.Fatalf("selected row not in reverse video:\n%q", cv)
	}
	if got := sgr.ReplaceAllString(cv, ""); got != pv {
		t.Fatalf("the coloured screen says something else than the plain one:\n%s\n---\n%s", got, pv)
	}
}
