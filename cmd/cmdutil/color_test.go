package cmdutil

import (
	"errors"
	"strings"
	"testing"
)

// Colour only on a terminal, never with NO_COLOR/--no-color, never in pipes.
func TestColorOnlyOnTTY(t *testing.T) {
	ios, _, out, errb := Test()
	if got := ios.ColorScheme(ios.Out).Red("x"); got != "x" {
		t.Errorf("pipe got colour: %q", got)
	}
	ios.SetTTY(false, true, true)
	if got := ios.ColorScheme(ios.Out).Red("x"); !strings.Contains(got, "\x1b[") {
		t.Errorf("terminal got no colour: %q", got)
	}
	PrintError(ios, errors.New("boom"), false)
	if !strings.Contains(errb.String(), "\x1b[") || !strings.Contains(errb.String(), "boom") {
		t.Errorf("error on a terminal: %q", errb.String())
	}
	ios.DisableColor()
	if got := ios.ColorScheme(ios.Out).Green("x"); got != "x" {
		t.Errorf("--no-color got colour: %q", got)
	}
	_ = out
}

// --json errors are one envelope, never coloured.
func TestJSONErrorEnvelope(t *testing.T) {
	ios, _, _, errb := Test()
	ios.SetTTY(true, true, true)
	PrintError(ios, WithHint(FlagErrorf("bad --x"), "try --y"), true)
	want := `{"error":{"code":"usage","message":"bad --x","hint":"try --y"}}` + "\n"
	if errb.String() != want {
		t.Errorf("got %q, want %q", errb.String(), want)
	}
}
