package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// tone is what a state means to an operator. Colour only ever repeats
// it: every state is also a word on screen.
type tone int

const (
	tonePlain tone = iota
	toneGood
	toneWarn
	toneBad
	toneDim
)

// styles paints with the 16 ANSI colours and the terminal's own
// foreground and background, so light and dark terminals both read; with
// colour off (NO_COLOR, --no-color, not a terminal) every style is plain
// text and the selection shows by its marker alone.
type styles struct {
	tones    [5]lipgloss.Style
	selected lipgloss.Style
	title    lipgloss.Style
	focus    lipgloss.Style
	header   lipgloss.Style
	dim      lipgloss.Style
	r        *lipgloss.Renderer
}

// plainRenderer writes no escape sequence at all.
func plainRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.Ascii)
	return r
}

func newStyles(r *lipgloss.Renderer) styles {
	if r == nil {
		r = plainRenderer()
	}
	fg := func(c string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(c)) }
	return styles{
		tones:    [5]lipgloss.Style{r.NewStyle(), fg("2"), fg("3"), fg("1").Bold(true), r.NewStyle().Faint(true)},
		selected: r.NewStyle().Reverse(true),
		title:    r.NewStyle().Bold(true),
		focus:    r.NewStyle().Bold(true).Underline(true),
		header:   r.NewStyle().Bold(true),
		dim:      r.NewStyle().Faint(true),
		r:        r,
	}
}

func (s styles) tone(t tone, text string) string {
	if t == tonePlain {
		return text
	}
	return s.tones[t].Render(text)
}
