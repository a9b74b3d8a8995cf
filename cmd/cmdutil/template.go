package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"
)

// --template TEXT formats what a command prints with --json through a Go
// template, as gh's --template does, and implies --json. The template's
// dot is the JSON document (objects are maps keyed by the JSON field
// names: {{.name}}); it is parsed before the command runs, so a bad one
// (exit 2) never leaves a command half done. On a terminal the output is
// escaped as every text from a host is (see SafeText).

// FormattingHelp is `help formatting`: the three ways to shape output and
// the template's functions.
const FormattingHelp = `Every command that prints data takes --json: the data as indented JSON on
stdout. Two flags reshape it, and imply --json:

  --jq EXPR        filter it with a jq expression; strings print raw
  --template TEXT  format it with a Go template (https://pkg.go.dev/text/template)

The template's dot is the JSON document, with the field names --json
prints: {{.name}}, {{range .}}...{{end}} over an array. Besides Go's own
functions (len, index, printf, eq, ...) these are there:

  json VALUE              VALUE as compact JSON
  join SEP LIST           the items of LIST joined with SEP
  timeago TIME            an RFC 3339 time as an age: "3m ago" (- when null)
  timefmt LAYOUT TIME     an RFC 3339 time in a Go layout: "2006-01-02 15:04"
  tablerow FIELD...       one row of a table whose columns line up
  tablerender             print the rows so far (done at the end anyway)

A bad template, or one that fails on the data, is a usage error (exit 2)
and prints nothing.

EXAMPLES

  kandev-exec host ls --template '{{range .}}{{.name}} {{.status}}{{"\n"}}{{end}}'
  kandev-exec task ls --template '{{range .}}{{tablerow .id .name .phase (timeago .created_at)}}{{end}}'
  kandev-exec session show S --template '{{.state}} {{json .exit_code}}{{"\n"}}'
`

// templateWriter stands in for IOStreams.Out while --template is given.
type templateWriter struct {
	out  io.Writer
	text string
	tmpl *template.Template
	tty  bool // out is a terminal: escape what the template prints
}

func (t *templateWriter) Write(p []byte) (int, error) { return t.out.Write(p) }

// parseTemplate parses text with the functions FormattingHelp lists; the
// table ones are bound per execution (see filter).
func parseTemplate(text string) (*template.Template, error) {
	t, err := template.New("--template").Funcs(templateFuncs(&table{})).Parse(text)
	if err != nil {
		return nil, templateError(text, err)
	}
	return t, nil
}

func templateError(text string, err error) error {
	return WithHint(FlagErrorf("--template %q: %v", text, err), "the template is Go's text/template: `kandev-exec help formatting`")
}

// filter executes the template over v (as its JSON form) and prints the
// result, or nothing when it fails: stdout stays empty on error.
func (t *templateWriter) filter(v any) error {
	input, err := jsonForm(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	tb := &table{out: &out}
	tmpl, err := t.tmpl.Clone()
	if err != nil {
		return err
	}
	if err := tmpl.Funcs(templateFuncs(tb)).Execute(&out, input); err != nil {
		return templateError(t.text, err)
	}
	tb.render()
	s := out.String()
	if t.tty {
		s = SafeText(s)
	}
	_, err = io.WriteString(t.out, s)
	return err
}

// table collects tablerow's rows until tablerender (or the end) prints
// them with their columns lined up.
type table struct {
	out  *bytes.Buffer
	rows [][]string
}

func (tb *table) render() {
	if len(tb.rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(tb.out, 0, 4, 2, ' ', 0)
	for _, r := range tb.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	tb.rows = nil
}

func templateFuncs(tb *table) template.FuncMap {
	return template.FuncMap{
		"json": func(v any) (string, error) {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			err := enc.Encode(v)
			return strings.TrimSuffix(b.String(), "\n"), err
		},
		"join": func(sep string, list []any) string {
			items := make([]string, len(list))
			for i, v := range list {
				items[i] = fmt.Sprint(v)
			}
			return strings.Join(items, sep)
		},
		"timeago": func(v any) (string, error) {
			t, err := templateTime(v)
			return Ago(t), err
		},
		"timefmt": func(layout string, v any) (string, error) {
			t, err := templateTime(v)
			if err != nil || t.IsZero() {
				return "", err
			}
			return t.Format(layout), nil
		},
		"tablerow": func(fields ...any) string {
			row := make([]string, len(fields))
			for i, v := range fields {
				row[i] = fmt.Sprint(v)
			}
			tb.rows = append(tb.rows, row)
			return ""
		},
		"tablerender": func() string {
			tb.render()
			return ""
		},
	}
}

// templateTime reads a time as --json carries it: an RFC 3339 string, or
// null (the zero time).
func templateTime(v any) (time.Time, error) {
	switch s := v.(type) {
	case nil:
		return time.Time{}, nil
	case string:
		return parseTimestamp(s)
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time, got %v", v)
}
