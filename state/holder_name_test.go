package state

import "testing"

// Regression: a holder is named by program and subcommands only, so a
// value passed on the command line never reaches lock notes or records.
func TestCommandNameDropsArguments(t *testing.T) {
	cases := map[string][]string{
		"kandev-exec task launch": {"/usr/bin/kandev-exec", "task", "launch", "--env", "TOKEN=s3cret", "--", "x"},
		"kandev-exec host add":    {"kandev-exec", "host", "add", "prod", "--alias", "p"},
		"kandev-exec secret set":  {"./kandev-exec", "secret", "set", "s3cret=1"},
		"state.test":              {"/tmp/state.test", "-test.run=X"},
		"":                        {},
	}
	for want, args := range cases {
		if got := commandName(args); got != want {
			t.Errorf("commandName(%q) = %q, want %q", args, got, want)
		}
	}
}
