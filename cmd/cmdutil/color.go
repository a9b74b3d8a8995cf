package cmdutil

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// ColorScheme colours human output on a terminal, and is a no-op in pipes,
// with --no-color or NO_COLOR, so scripts never see ANSI codes.
type ColorScheme struct {
	r  *lipgloss.Renderer
	on bool
}

// ColorScheme is for text written to w (Out or ErrOut).
func (s *IOStreams) ColorScheme(w io.Writer) *ColorScheme {
	on := !s.noColor && ((w == s.Out && s.stdoutTTY) || (w == s.ErrOut && s.stderrTTY))
	r := lipgloss.NewRenderer(w)
	if on {
		r.SetColorProfile(termenv.ANSI)
	}
	return &ColorScheme{r: r, on: on}
}

func (c *ColorScheme) paint(color, s string) string {
	if !c.on {
		return s
	}
	return c.r.NewStyle().Foreground(lipgloss.Color(color)).Render(s)
}

func (c *ColorScheme) Green(s string) string  { return c.paint("2", s) }
func (c *ColorScheme) Yellow(s string) string { return c.paint("3", s) }
func (c *ColorScheme) Red(s string) string    { return c.paint("1", s) }

// Dim is for text beside the point: a script's output under its step.
func (c *ColorScheme) Dim(s string) string {
	if !c.on {
		return s
	}
	return c.r.NewStyle().Faint(true).Render(s)
}

// Status colours an ok/warn/fail word.
func (c *ColorScheme) Status(s string) string {
	switch s {
	case "ok":
		return c.Green(s)
	case "warn":
		return c.Yellow(s)
	case "fail":
		return c.Red(s)
	}
	return s
}
