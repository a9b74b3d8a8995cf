package cmdutil

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func formatWith(t *testing.T, text string, tty bool, v any) (string, error) {
	t.Helper()
	tmpl, err := parseTemplate(text)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = WriteJSON(&templateWriter{out: &out, text: text, tmpl: tmpl, tty: tty}, v)
	return out.String(), err
}

func TestTemplateFormats(t *testing.T) {
	type row struct {
		Name    string     `json:"name"`
		Bytes   uint64     `json:"bytes"`
		Tags    []string   `json:"tags"`
		Created time.Time  `json:"created_at"`
		Ended   *time.Time `json:"ended_at"`
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rows := []row{{"alpha", 1 << 62, []string{"a", "b"}, at, nil}, {"beta-long\x1b[2J", 7, []string{}, at, &at}}
	for _, tc := range []struct {
		text string
		tty  bool
		want string
	}{
		{`{{range .}}{{.name}}:{{.bytes}} {{end}}`, false, "alpha:4611686018427387904 beta-long\x1b[2J:7 "},    // fields by JSON name, numbers exact
		{`{{range .}}{{.name}} {{end}}`, true, `alpha beta-long\x1b[2J `},                                      // escaped on a terminal
		{`{{json (index . 0).tags}} {{json (index . 1).ended_at}}`, false, `["a","b"] "2026-03-04T05:06:07Z"`}, // compact JSON
		{`{{join "," (index . 0).tags}}`, false, "a,b"},
		{`{{timefmt "2006-01-02 15:04" (index . 0).created_at}}|{{timefmt "2006" (index . 0).ended_at}}`, false, "2026-03-04 05:06|"},
		{`{{timeago (index . 0).ended_at}}`, false, "-"}, // null is no time
		{`{{range .}}{{tablerow .name .bytes}}{{end}}`, false, "alpha          4611686018427387904\nbeta-long\x1b[2J  7\n"},
		{`{{tablerow "A" "B"}}{{tablerender}}--{{"\n"}}{{tablerow "CC" "D"}}`, false, "A  B\n--\nCC  D\n"}, // rows print where tablerender is, the rest at the end
	} {
		got, err := formatWith(t, tc.text, tc.tty, rows)
		if err != nil || got != tc.want {
			t.Errorf("%s (tty %v): got %q, %v; want %q", tc.text, tc.tty, got, err, tc.want)
		}
	}
	if got, err := formatWith(t, `{{timeago .}}`, false, time.Now().Add(-3*time.Minute)); err != nil || got != "3m ago" {
		t.Errorf("timeago: %q, %v", got, err)
	}
}

// A bad template is a usage error (exit 2) found before the command runs;
// one that fails on the data is too, and prints nothing.
func TestTemplateErrors(t *testing.T) {
	for _, text := range []string{`{{.name`, `{{nosuchfn 1}}`} {
		if _, err := parseTemplate(text); Classify(err).Exit != ExitUsage.Status {
			t.Errorf("%s: %v: want exit 2", text, err)
		}
	}
	for _, text := range []string{`ok {{.name}}`, `ok {{timeago .}}`} {
		out, err := formatWith(t, text, false, []int{1})
		var fe *FlagError
		if !errors.As(err, &fe) || out != "" {
			t.Errorf("%s: %q, %v; want a usage error and no output", text, out, err)
		}
	}
}
