package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/itchyny/gojq"
)

// --jq EXPR filters what a command prints with --json, as gh's --jq does,
// and implies --json. The filter is compiled before the command runs, so
// a bad expression (exit 2) never leaves a command half done. Each result
// is printed on its own line: a string as raw text, anything else as
// compact JSON. On a terminal, raw strings are escaped as every text from
// a host is (see Safe): a filtered uname must not redraw the screen.

// jqWriter stands in for IOStreams.Out while --jq is given: WriteJSON
// sends documents through the filter, and anything else written passes
// through unchanged (a remote command's output, completion scripts).
type jqWriter struct {
	out  io.Writer
	expr string
	code *gojq.Code
	tty  bool // out is a terminal: escape raw strings
}

func (j *jqWriter) Write(p []byte) (int, error) { return j.out.Write(p) }

// compileJQ parses and compiles expr. The filter sees no environment
// ($ENV and env are empty) and loads no modules: it reads the command's
// output and nothing else.
func compileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, jqError(expr, err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, jqError(expr, err)
	}
	return code, nil
}

func jqError(expr string, err error) error {
	return WithHint(FlagErrorf("--jq %q: %v", expr, err), "the filter is jq's language: https://jqlang.org/manual/")
}

// filter runs the filter over v (as its JSON form) and prints every
// result, or nothing when the filter fails: stdout stays empty on error.
func (j *jqWriter) filter(v any) error {
	input, err := jsonForm(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	iter := j.code.Run(input)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			return jqError(j.expr, err)
		}
		if s, isStr := r.(string); isStr {
			if j.tty {
				s = SafeText(s)
			}
			out.WriteString(s)
		} else {
			b, err := gojq.Marshal(r)
			if err != nil {
				return jqError(j.expr, err)
			}
			out.Write(b)
		}
		out.WriteByte('\n')
	}
	_, err = j.out.Write(out.Bytes())
	return err
}

// jsonForm is v as its --json document reads: maps, lists, strings and
// json.Number, so 64-bit IDs and sizes stay exact.
func jsonForm(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// jsonFilter stands in for IOStreams.Out while --jq or --template
// reshapes the --json document: WriteJSON hands it the document, and
// anything else written passes through unchanged.
type jsonFilter interface {
	io.Writer
	filter(v any) error
}

// SetupFilter installs the --jq filter or the --template on f.IO.Out,
// when one is given (never both). The root command calls it before any
// command runs, so a bad one (exit 2) never leaves a command half done.
func (f *Factory) SetupFilter() error {
	expr, tmpl := f.v.GetString("jq"), f.v.GetString("template")
	if _, done := f.IO.Out.(jsonFilter); done || (expr == "" && tmpl == "") {
		return nil
	}
	if expr != "" && tmpl != "" {
		return FlagErrorf("--jq and --template cannot be used together: pick one")
	}
	if tmpl != "" {
		t, err := parseTemplate(tmpl)
		if err != nil {
			return err
		}
		f.IO.Out = &templateWriter{out: f.IO.Out, text: tmpl, tmpl: t, tty: f.IO.IsStdoutTTY()}
		return nil
	}
	code, err := compileJQ(expr)
	if err != nil {
		return err
	}
	f.IO.Out = &jqWriter{out: f.IO.Out, expr: expr, code: code, tty: f.IO.IsStdoutTTY()}
	return nil
}
