package tui

import (
	"os"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Goldens hold plain text: no colour profile detected from however the
// tests were started (the view's own styles are plain already; this
// covers bubbles' defaults too).
func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}
