// Package quietterm keeps the CLI from asking the terminal anything before
// its main runs. bubbletea v1 asks from its package init, through lipgloss
// and termenv, for the terminal's background colour (an OSC 11 query
// fenced by a cursor position report), and reads the answer from the
// terminal itself: whatever the user typed ahead is read and dropped (the
// first keys meant for `task shell`'s host), and a terminal that does not
// answer holds the start for termenv's timeout. The CLI never needs the
// answer: every renderer it makes has a fixed colour profile and no
// colour that depends on the background.
//
// Go initializes packages in import-path order once their imports are
// initialized, so this one, which imports only the standard library and
// sorts before github.com/muesli/termenv, initializes before termenv,
// lipgloss and bubbletea. It sets CI, which termenv takes to mean there
// is no terminal to ask; Restore, the first thing the CLI does, gives the
// environment back as it was. TestTaskShellKeepsTypeAhead (in cmd) proves
// the order holds.
package quietterm

import "os"

// ciWasSet says CI came from the environment, and is left as it was.
var ciWasSet bool

func init() {
	if _, ciWasSet = os.LookupEnv("CI"); !ciWasSet {
		os.Setenv("CI", "kandev-exec")
	}
}

// Restore takes CI out of the environment again when init put it there,
// before anything reads it or passes it on to a child process.
func Restore() {
	if !ciWasSet {
		os.Unsetenv("CI")
	}
}
