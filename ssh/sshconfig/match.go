package sshconfig

import (
	"fmt"
	"strings"
)

// matchLine evaluates a Match line the way ssh does: every criterion is
// checked (there is no short cut), `final` asks for a second pass, and in
// an included file reached from an inactive block nothing applies.
func (p *cfgParser) matchLine(rest string, f *cfgFile, active *bool, fail func(string, ...any) error) error {
	ok, left, err := p.match(rest)
	if err != nil {
		return fail("bad Match condition: %v", err)
	}
	if left != "" {
		return fail("keyword match extra arguments at end of line")
	}
	*active = ok && !f.neverMatch
	return nil
}

// match returns whether the criteria hold and any text it did not read.
func (p *cfgParser) match(cp string) (bool, string, error) {
	result, attributes := true, 0
	for {
		attr, more, ok := strdelim(cp, true)
		if !ok || attr == "" {
			break
		}
		cp = more
		if attr[0] == '#' {
			return result, "", nil
		}
		neg := attr[0] == '!'
		crit := asciiLower(strings.TrimPrefix(attr, "!"))
		if crit == "all" {
			arg, more, ok := strdelim(cp, true)
			if attributes > 1 || (ok && arg != "" && arg[0] != '#') {
				return false, "", fmt.Errorf("'%s' cannot be combined with other Match attributes", attr)
			}
			if ok && arg != "" {
				more = "" // a comment: the rest of the line is read
			}
			return result && !neg, more, nil
		}
		attributes++
		if crit == "canonical" || crit == "final" {
			if crit == "final" && !p.final {
				p.wantFinal = true
			}
			if p.final == neg {
				result = false
			}
			continue
		}
		arg, more, ok := strdelim(cp, true)
		if !ok || arg == "" || arg[0] == '#' {
			return false, "", fmt.Errorf("missing Match criteria for %s", crit)
		}
		cp = more
		var hit bool
		switch crit {
		case "host":
			host, err := p.hostnameSoFar()
			if err != nil {
				return false, "", err
			}
			hit = matchPatternList(asciiLower(host), arg, true) == 1
		case "originalhost":
			hit = matchPatternList(asciiLower(p.hostArg), arg, true) == 1
		case "user":
			u := p.s.first("user")
			if u == "" {
				u = p.me.name
			}
			hit = matchPatternList(u, arg, false) == 1
		case "localuser":
			hit = matchPatternList(p.me.name, arg, false) == 1
		case "exec":
			return false, "", fmt.Errorf("Match exec runs a command, which the built-in ssh config parser does not do; install an OpenSSH client so `ssh -G` evaluates it")
		default:
			return false, "", fmt.Errorf("unsupported Match criterion %q", crit)
		}
		if hit == neg {
			result = false
		}
	}
	if attributes == 0 {
		return false, "", fmt.Errorf("one or more attributes required for Match")
	}
	return result, cp, nil
}
