package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The YAML parser reports a syntax error at the line where the mapping or
// scalar it was reading began, one line early or with no line at all, in
// its own terms ("did not find expected key"; a tab is "a character that
// cannot start any token"). The user needs the line and column to change.
// The parser reads in order and stops at the first token it cannot take,
// so the shortest prefix of the file that fails with the same complaint
// ends exactly there: syntaxError finds it by bisection, first by whole
// lines, then byte by byte within the last, and words the complaint
// plainly.

var yamlLinePrefix = regexp.MustCompile(`^line \d+: `)

// syntaxError is err, the parser's failure on data, as a DecodeError at
// the line and column (1-based, in characters) the user must change.
func syntaxError(file string, data []byte, err error) *DecodeError {
	problem := parserWords(err)
	fails := func(prefix []byte) bool {
		e := parseAll(prefix)
		return e != nil && parserWords(e) == problem
	}
	ends := lineEnds(data)
	// The fewest whole lines that fail: the parser stopped on the last.
	i := sort.Search(len(ends), func(i int) bool { return fails(data[:ends[i]]) })
	if i == len(ends) {
		return &DecodeError{File: file, Msg: "invalid YAML: " + problem}
	}
	start := 0
	if i > 0 {
		start = ends[i-1]
	}
	line := bytes.TrimRight(data[start:ends[i]], "\r\n")
	// The byte of that line whose arrival makes it fail; len(line) when
	// only the whole line does.
	at := sort.Search(len(line), func(j int) bool { return fails(data[:start+j+1]) })
	col, msg := plainWords(problem, line, at)
	return &DecodeError{File: file, Line: i + 1, Col: col, Msg: "invalid YAML: " + msg}
}

// lineEnds is the offset just past each line of data.
func lineEnds(data []byte) []int {
	var ends []int
	for off := 0; off < len(data); {
		n := bytes.IndexByte(data[off:], '\n')
		if n < 0 {
			n = len(data) - off - 1
		}
		off += n + 1
		ends = append(ends, off)
	}
	return ends
}

// parseAll parses every document of data, as newDecoder does.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// parserWords is the parser's complaint without its prefix and line.
func parserWords(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	return yamlLinePrefix.ReplaceAllString(msg, "")
}

// plainWords says what is wrong on line, where the parser stopped at byte
// at (len(line): its end), and at which column. A tab in the indentation
// comes first: YAML forbids it, and the parser calls it something else.
func plainWords(problem string, line []byte, at int) (col int, msg string) {
	column := func(b int) int { return utf8.RuneCount(line[:b]) + 1 }
	indent := len(line) - len(bytes.TrimLeft(line, " \t"))
	if tab := bytes.IndexByte(line[:indent], '\t'); tab >= 0 {
		return column(tab), "a tab indents this line: YAML indents with spaces only"
	}
	if at >= len(line) {
		at = indent // the complaint needs the whole line: point at its start
	}
	switch {
	case problem == "did not find expected key":
		return column(indent), "this line is indented like none of the keys above it: line it up with the keys of its mapping"
	case problem == "did not find expected '-' indicator":
		return column(indent), "this line is indented like neither the list's '- ' items nor their keys: line it up with one of them"
	case problem == "could not find expected ':'":
		return column(indent), "expected a key and ':' (key: value) on this line"
	case problem == "mapping values are not allowed in this context":
		return column(at), "a ':' where no key can start: quote a value that holds ': ', or indent this line as deep as the keys it belongs with"
	case problem == "block sequence entries are not allowed in this context":
		return column(at), "a list item ('- ') cannot follow a key's value on its line: put the list on the lines below the key"
	case problem == "found unexpected end of stream":
		return column(at), "this quote, '[' or '{' is never closed"
	case problem == "found character that cannot start any token":
		if at < len(line) && (line[at] == '@' || line[at] == '`') {
			return column(at), fmt.Sprintf("a value cannot start with %q (YAML keeps it for later use): put the value in quotes", line[at])
		}
		return column(at), "this character cannot start a value: put the value in quotes"
	case strings.HasPrefix(problem, "did not find expected ',' or "):
		return column(at), "a '[' or '{' that is not closed before this, or a missing ',' between its entries"
	case problem == "found unknown escape character":
		return column(at), "double quotes know no such '\\' escape: use single quotes, or write '\\\\'"
	case problem == "did not find expected node content":
		return column(at), "a value is missing here"
	}
	return column(at), problem
}
