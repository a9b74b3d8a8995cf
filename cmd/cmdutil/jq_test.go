package cmdutil

import (
	"bytes"
	"errors"
	"testing"
)

func filterWith(t *testing.T, expr string, tty bool, v any) (string, error) {
	t.Helper()
	code, err := compileJQ(expr)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = WriteJSON(&jqWriter{out: &out, expr: expr, code: code, tty: tty}, v)
	return out.String(), err
}

func TestJQFilter(t *testing.T) {
	type row struct {
		Name  string `json:"name"`
		Bytes uint64 `json:"bytes"`
	}
	rows := []row{{"alpha", 1 << 62}, {"beta\x1b[2J", 7}}
	for _, tc := range []struct {
		expr string
		tty  bool
		want string
	}{
		{".[].name", false, "alpha\nbeta\x1b[2J\n"},                            // strings raw, one per line
		{".[].name", true, "alpha\nbeta\\x1b[2J\n"},                            // escaped on a terminal
		{".[0].bytes", false, "4611686018427387904\n"},                         // 64-bit numbers stay exact
		{"[.[] | {name}] | length", false, "2\n"},                              // numbers as JSON
		{".[0]", false, `{"bytes":4611686018427387904,"name":"alpha"}` + "\n"}, // compact
		{"empty", false, ""},
		{"$ENV | length", false, "0\n"}, // the filter sees no environment
	} {
		got, err := filterWith(t, tc.expr, tc.tty, rows)
		if err != nil || got != tc.want {
			t.Errorf("%s (tty %v): got %q, %v; want %q", tc.expr, tc.tty, got, err, tc.want)
		}
	}
}

// A bad expression is a usage error (exit 2) found before the command
// runs; one that fails on the data is too, and prints nothing.
func TestJQErrors(t *testing.T) {
	for _, tc := range []struct{ name, expr string }{
		{"syntax", ".["},
		{"unknown function", "nosuchfn(1)"},
		{"module", `import "x" as x; .`},
	} {
		if _, err := compileJQ(tc.expr); Classify(err).Exit != ExitUsage.Status {
			t.Errorf("%s: %v: want exit 2", tc.name, err)
		}
	}
	out, err := filterWith(t, ".[0], .foo", false, []int{1})
	var fe *FlagError
	if !errors.As(err, &fe) || out != "" {
		t.Fatalf("runtime error: %q, %v; want a usage error and no output", out, err)
	}
}

// Without --jq, WriteJSON writes indented JSON; with it, other writes to
// stdout pass through.
func TestJQWriterPassesOtherOutput(t *testing.T) {
	var out bytes.Buffer
	code, err := compileJQ(".")
	if err != nil {
		t.Fatal(err)
	}
	w := &jqWriter{out: &out, expr: ".", code: code}
	if _, err := w.Write([]byte("raw remote output\n")); err != nil || out.String() != "raw remote output\n" {
		t.Fatalf("pass-through: %q, %v", out.String(), err)
	}
	var plain bytes.Buffer
	if err := WriteJSON(&plain, map[string]int{"a": 1}); err != nil || plain.String() != "{\n  \"a\": 1\n}\n" {
		t.Fatalf("plain WriteJSON: %q, %v", plain.String(), err)
	}
}
