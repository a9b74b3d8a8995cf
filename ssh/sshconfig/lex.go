package sshconfig

import (
	"errors"
	"strings"
)

// The lexical rules of ssh_config as OpenSSH applies them: the keyword ends
// at whitespace or one '=', arguments honour both quote characters and
// backslash escapes, and '#' starts a comment only where a word starts.

const cfgSpace = " \t\r\n"

var errQuotes = errors.New("invalid quotes")

// lexLine returns the lower-cased keyword, the raw text after it (which
// ProxyJump and Match read themselves) and the split arguments. A blank
// or comment line has an empty keyword.
func lexLine(line string) (kw, rest string, args []string, err error) {
	line = strings.TrimRight(line, cfgSpace+"\f")
	tok, more, ok := strdelim(line, true)
	if ok && tok == "" {
		tok, more, ok = strdelim(more, true)
	}
	if !ok || tok == "" || tok[0] == '#' {
		return "", "", nil, nil
	}
	kw = asciiLower(tok)
	rest = strings.TrimLeft(more, cfgSpace)
	if rest == "" {
		return kw, "", nil, nil
	}
	args, err = argvSplit(rest)
	return kw, rest, args, err
}

// strdelim cuts the next token off s, splitting on whitespace, a double
// quote and (with equals) one '='. ok is false when nothing is left or a
// quote is not closed.
func strdelim(s string, equals bool) (tok, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	delims := cfgSpace + `"`
	if equals {
		delims += "="
	}
	i := strings.IndexAny(s, delims)
	if i < 0 {
		return s, "", true
	}
	if s[i] == '"' {
		j := strings.IndexByte(s[i+1:], '"')
		if j < 0 {
			return "", "", false
		}
		end := i + 1 + j
		return s[:i] + s[i+1:end], strings.TrimLeft(s[end+1:], cfgSpace), true
	}
	tok, rest = s[:i], strings.TrimLeft(s[i+1:], cfgSpace)
	if equals && s[i] != '=' && strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], cfgSpace)
	}
	return tok, rest, true
}

// argvSplit splits arguments: spaces and tabs separate them, single or
// double quotes group them, a backslash escapes a quote, a backslash or
// (outside quotes) a space, and '#' at the start of a word ends the line.
func argvSplit(s string) ([]string, error) {
	var args []string
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			continue
		}
		if s[i] == '#' {
			break
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"' || s[i+1] == '\\' || (quote == 0 && s[i+1] == ' ')):
				i++
				b.WriteByte(s[i])
				continue
			case quote == 0 && (c == ' ' || c == '\t'):
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				continue
			case quote != 0 && c == quote:
				quote = 0
				continue
			default:
				b.WriteByte(c)
				continue
			}
			break
		}
		if quote != 0 {
			return nil, errQuotes
		}
		args = append(args, b.String())
	}
	return args, nil
}

// MatchPattern is OpenSSH's wildcard match: '*' and '?' only, byte-wise and
// case-sensitive (there are no character classes).
func MatchPattern(s, pat string) bool {
	// Classic backtracking over the last '*'.
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(pat) && pat[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pat) && (pat[pi] == '?' || pat[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == '*' {
		pi++
	}
	return pi == len(pat)
}

// maxSubpattern is the longest sub-pattern OpenSSH keeps; a longer one
// fails the whole list.
const maxSubpattern = 1023

// matchPatternList applies a comma-separated list with '!' negation: 1 on
// a positive match, -1 on any negated match, 0 otherwise. lower folds the
// patterns (the string is the caller's to fold).
func matchPatternList(s, list string, lower bool) int {
	got := 0
	for i := 0; i < len(list); {
		neg := list[i] == '!'
		if neg {
			i++
		}
		end := strings.IndexByte(list[i:], ',')
		if end < 0 {
			end = len(list) - i
		}
		sub := list[i : i+end]
		if i += end; i < len(list) {
			i++ // the comma
		}
		if len(sub) >= maxSubpattern {
			return 0
		}
		if lower {
			sub = asciiLower(sub)
		}
		if MatchPattern(s, sub) {
			if neg {
				return -1
			}
			got = 1
		}
	}
	return got
}

// asciiLower folds A-Z only, as OpenSSH's lowercase() does in the C locale.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
