package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// At every size the view fills exactly the terminal: as many lines as it
// has rows, none wider than it (a taller view would push the title off
// the top), in every mode.
func TestViewFitsEveryTerminalSize(t *testing.T) {
	m := ready(t, teardownStore(t), &recorder{})
	modes := map[string]func(){
		"panes":  func() {},
		"dialog": func() { press(m, runes("c")) },
		"help":   func() { press(m, question) },
		"detail": func() { press(m, tab, enter) },
		"filter": func() { press(m, runes("/"), runes("web")) },
		"archive": func() {
			press(m, tab, runes("a"), runes("wrong"), enter)
		},
		"quarantine": func() { press(m, runes("Q"), runes(strings.Repeat("a long reason ", 14)), enter, runes("2h"), enter) },
	}
	for name, open := range modes {
		m.dlg, m.help, m.detail, m.filtering, m.filter, m.focus = nil, false, nil, false, "", paneHosts
		m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
		m.refilter()
		open()
		if name != "panes" && name != "filter" && m.dlg == nil && !m.help && m.detail == nil {
			t.Fatalf("%s did not open", name)
		}
		for _, sz := range sizes() {
			w, h := sz[0], sz[1]
			m.Update(tea.WindowSizeMsg{Width: w, Height: h})
			lines := strings.Split(m.View(), "\n")
			if len(lines) > h || w >= minWidth && h >= minHeight && len(lines) != h {
				t.Fatalf("%s at %dx%d: %d lines", name, w, h, len(lines))
			}
			for i, l := range lines {
				if n := ansi.StringWidth(l); n > w {
					t.Fatalf("%s at %dx%d: line %d is %d wide: %q", name, w, h, i+1, n, l)
				}
			}
		}
	}
}

// sizes are every size around the smallest the view lays out, then a
// spread of larger ones.
func sizes() [][2]int {
	var out [][2]int
	for w := 55; w <= 90; w++ {
		for h := 8; h <= 26; h++ {
			out = append(out, [2]int{w, h})
		}
	}
	for w := 91; w <= 240; w += 13 {
		for h := 27; h <= 70; h += 7 {
			out = append(out, [2]int{w, h})
		}
	}
	return out
}
