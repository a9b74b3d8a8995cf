package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The panes lay their tables out themselves rather than with bubbles'
// table: its cells are cut by a width count that does not know escape
// sequences, so a coloured cell comes out garbled, and its cursor is a
// row index while this view keeps its selection by ID. Only the rows on
// screen are ever formatted, so a frame costs the same at 10 rows or
// 10,000.

// column is one column of a pane's table.
type column struct {
	title string
	min   int  // narrowest useful width
	want  int  // width it grows to, a column at a time, when there is room
	flex  bool // takes the room left after that, up to twice want
	drop  int  // dropped when the terminal is too narrow, highest first; 0: never
}

// marker is the selection marker's width: "> " on the selected row.
const marker = 2

// fit gives each column its width for a terminal width; 0 drops it.
// Columns grow one cell per round, so no column starves another.
func fit(cols []column, width int) []int {
	ws := make([]int, len(cols))
	used := marker
	for i, c := range cols {
		ws[i] = c.min
		used += c.min + 1
	}
	for used > width+1 {
		worst := -1
		for i, c := range cols {
			if ws[i] > 0 && c.drop > 0 && (worst < 0 || c.drop > cols[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		used -= ws[worst] + 1
		ws[worst] = 0
	}
	extra := width + 1 - used
	for grew := true; grew && extra > 0; {
		grew = false
		for i, c := range cols {
			if ws[i] > 0 && ws[i] < c.want && extra > 0 {
				ws[i]++
				extra--
				grew = true
			}
		}
	}
	// A flexible column takes what is left, up to twice its wish: past
	// that, a row reads better ending short than spread thin.
	for i, c := range cols {
		if ws[i] > 0 && c.flex && extra > 0 {
			g := min(extra, 2*c.want-ws[i])
			ws[i] += g
			extra -= g
		}
	}
	return ws
}

// cell pads or cuts s (plain text) to exactly w columns; a cut ends in
// "~", an ASCII glyph every terminal draws one column wide.
func cell(s string, w int) string {
	n := ansi.StringWidth(s)
	switch {
	case n == w:
		return s
	case n < w:
		return s + strings.Repeat(" ", w-n)
	}
	s = ansi.Truncate(s, w, "~")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n) // a wide rune did not fit
	}
	return s
}

// line renders one table line of plain cells: the marker, then each kept
// column. The cell at toned is painted with t unless the whole row is
// selected (reverse video would be broken by the cell's reset).
func line(s styles, ws []int, cells []string, sel, focused bool, toned int, t tone) string {
	var b strings.Builder
	if sel {
		b.WriteString("> ")
	} else {
		b.WriteString("  ")
	}
	first := true
	for i, w := range ws {
		if w == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		c := cell(cells[i], w)
		if i == toned && !(sel && focused) {
			c = s.tone(t, c)
		}
		b.WriteString(c)
	}
	if sel && focused {
		return s.selected.Render(b.String())
	}
	return b.String()
}

// header renders the column titles.
func header(s styles, ws []int, cols []column) string {
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.title
	}
	return s.header.Render(line(styles{}, ws, cells, false, false, -1, tonePlain))
}

// clip cuts a rendered line (which may hold escapes) to width.
func clip(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "")
}
