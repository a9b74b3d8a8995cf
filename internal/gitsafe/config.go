package gitsafe

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// A checkout's own configuration was written by the agent, so the
// product reads it itself rather than trusting git with it: to find the
// remotes it names, the filter drivers to switch off (env.go), and what
// cannot be switched off (docs/security.md, "What the proof refuses to
// trust").

// Entry is one key of a config file: section and name lower-cased
// as git compares them, the subsection as written (lower-cased in the
// old [section.sub] form, as git does).
type Entry struct {
	Section, Subsection, Name string
	Value                     string
	HasValue                  bool
	Where                     string // file:line, for a refusal's detail
}

func (e Entry) Key() string {
	if e.Subsection == "" {
		return e.Section + "." + e.Name
	}
	return e.Section + "." + e.Subsection + "." + e.Name
}

// Config is every key of a repository's own config files, in the order
// git reads them.
type Config []Entry

// Read parses files in order with read (a no-follow reader of the
// caller's): the first must exist, a later one that does not is skipped.
func Read(files []string, read func(string) ([]byte, error)) (Config, error) {
	var cfg Config
	for i, f := range files {
		b, err := read(f)
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		entries, err := Parse(b, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		cfg = append(cfg, entries...)
	}
	return cfg, nil
}

// IsInclude is a key no override can neutralise: it pulls in a file
// nothing here has read, whose keys cannot be switched off.
func (e Entry) IsInclude() bool {
	return (e.Section == "include" || e.Section == "includeif") && e.Name == "path"
}

// Include names the first include key, with where it stands.
func (c Config) Include() string {
	for _, e := range c {
		if e.IsInclude() {
			return fmt.Sprintf("%s (%s)", e.Key(), e.Where)
		}
	}
	return ""
}

// FilterDrivers are the filter.<driver> subsections the checkout defines.
func (c Config) FilterDrivers() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range c {
		if e.Section == "filter" && e.Subsection != "" && !seen[e.Subsection] {
			seen[e.Subsection] = true
			out = append(out, e.Subsection)
		}
	}
	return out
}

// Remote is one remote.<name>.url of the checkout.
type Remote struct{ Name, URL string }

// Remotes lists remote.<name>.url, sorted by URL and unique. A remote
// defined elsewhere (the user's config) is not seen, which only makes
// more commits look unpushed.
func (c Config) Remotes() []Remote {
	var out []Remote
	for _, e := range c {
		if e.Section == "remote" && e.Subsection != "" && e.Name == "url" && e.HasValue {
			out = append(out, Remote{e.Subsection, e.Value})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	uniq := out[:0]
	for i, r := range out {
		if i == 0 || r.URL != out[i-1].URL {
			uniq = append(uniq, r)
		}
	}
	return uniq
}

// Parse reads git's config syntax. What it does not understand is
// an error, never a guess: a key it skipped could be the one that runs
// code.
func Parse(b []byte, file string) (Config, error) {
	var out Config
	var section, subsection string
	text := strings.TrimPrefix(string(b), "\xef\xbb\xbf")
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line != "" && line[0] == '[' {
			var err error
			if section, subsection, line, err = parseSectionHeader(line); err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("line %d: a key outside any section", n+1)
		}
		name, value, hasValue := strings.Cut(line, "=")
		if !hasValue {
			name, _, _ = strings.Cut(name, "#")
			name, _, _ = strings.Cut(name, ";")
		}
		name = strings.TrimSpace(name)
		if !validConfigName(name) {
			return nil, fmt.Errorf("line %d: bad key %q", n+1, name)
		}
		e := Entry{Section: section, Subsection: subsection, Name: strings.ToLower(name), HasValue: hasValue,
			Where: fmt.Sprintf("%s:%d", file, n+1)}
		if hasValue {
			v, err := configValue(strings.TrimSpace(value))
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			e.Value = v
		}
		out = append(out, e)
	}
	return out, nil
}

// parseSectionHeader reads `[section]`, `[section "sub"]` or the old
// `[section.sub]` at the start of line and returns what follows it on
// the same line (a key may).
func parseSectionHeader(line string) (section, subsection, rest string, err error) {
	i := 1
	for i < len(line) && (IsAlnum(line[i]) || line[i] == '-' || line[i] == '.') {
		i++
	}
	section = strings.ToLower(line[1:i])
	if section == "" || i == len(line) {
		return "", "", "", errors.New("unterminated section header")
	}
	switch {
	case line[i] == ']':
		if name, sub, old := strings.Cut(section, "."); old {
			if name == "" || sub == "" {
				return "", "", "", fmt.Errorf("bad section %q", section)
			}
			section, subsection = name, sub
		}
		return section, subsection, strings.TrimSpace(line[i+1:]), nil
	case line[i] == ' ' || line[i] == '\t':
		if strings.Contains(section, ".") {
			return "", "", "", fmt.Errorf("bad section %q", section)
		}
		return parseQuotedSubsection(section, strings.TrimLeft(line[i:], " \t"))
	}
	return "", "", "", fmt.Errorf("bad section header %q", line)
}

// parseQuotedSubsection reads `"sub"]` after the section name: \" and \\
// are escapes, and git drops the backslash of any other.
func parseQuotedSubsection(section, s string) (string, string, string, error) {
	if s == "" || s[0] != '"' {
		return "", "", "", errors.New("a subsection must be quoted")
	}
	var sub strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", "", "", errors.New("unterminated subsection")
			}
			i++
			sub.WriteByte(s[i])
		case '"':
			if i+1 == len(s) || s[i+1] != ']' {
				return "", "", "", errors.New("unterminated section header")
			}
			return section, sub.String(), strings.TrimSpace(s[i+2:]), nil
		default:
			sub.WriteByte(c)
		}
	}
	return "", "", "", errors.New("unterminated subsection")
}

func validConfigName(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !IsAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// IsAlnum is an ASCII letter or digit, as git names keys.
func IsAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

// configValue unquotes one config value and drops a trailing comment.
func configValue(s string) (string, error) {
	var out strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\':
			if i+1 == len(s) {
				return "", errors.New("a value continued on the next line")
			}
			i++
			switch s[i] {
			case '"', '\\':
				out.WriteByte(s[i])
			case 'n':
				out.WriteByte('\n')
			case 't':
				out.WriteByte('\t')
			case 'b':
				return "", errors.New("a backspace escape in a value")
			default:
				return "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimRight(out.String(), " \t"), nil
		default:
			out.WriteByte(c)
		}
	}
	if quoted {
		return "", errors.New("unterminated quote")
	}
	return out.String(), nil
}
