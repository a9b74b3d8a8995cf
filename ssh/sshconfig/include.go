package sshconfig

import (
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
)

func (p *cfgParser) include(args []string, f *cfgFile, active *bool, depth int, fail func(string, ...any) error) error {
	for _, a := range args {
		if a == "" {
			return fail("keyword include empty argument")
		}
		if a[0] == '~' && !f.user {
			return fail("bad include path %s (~ is not allowed in the system config)", a)
		}
		matches := globInclude(includePattern(a, f.user), p.me)
		outer := *active
		for _, m := range matches {
			inc := &cfgFile{path: m, user: f.user, neverMatch: f.neverMatch || !outer}
			if err := p.file(inc, active, depth+1); err != nil {
				return err
			}
			*active = outer // an included file's Host or Match ends with it
		}
	}
	return nil
}

// includePattern is the glob an Include argument names: relative ones
// are under ~/.ssh for a user's config, /etc/ssh otherwise.
func includePattern(a string, user bool) string {
	switch {
	case a[0] == '/' || a[0] == '~':
		return a
	case user:
		return "~/.ssh/" + a
	}
	return "/etc/ssh/" + a
}

// globInclude expands an Include pattern as glob(3) with GLOB_TILDE does
// for ssh: ~ is $HOME (not the password database, unlike IdentityFile),
// ~user that user's home, wildcards do not match a leading dot unless the
// pattern has one, and the names come back sorted byte-wise.
func globInclude(pattern string, me local) []string {
	pattern = globTilde(pattern, me)
	cur := []string{""}
	if strings.HasPrefix(pattern, "/") {
		cur = []string{"/"}
	}
	for _, comp := range strings.Split(strings.Trim(pattern, "/"), "/") {
		if comp == "" {
			continue
		}
		var next []string
		for _, dir := range cur {
			if !strings.ContainsAny(comp, "*?[") {
				next = append(next, dir+unescapeGlob(comp))
				continue
			}
			names, err := dirNames(dir)
			if err != nil {
				continue // like glob(3): an unreadable directory matches nothing
			}
			for _, name := range names {
				if name[0] == '.' && !strings.HasPrefix(comp, ".") && !strings.HasPrefix(comp, `\.`) {
					continue
				}
				if ok, _ := filepath.Match(strings.Replace(comp, "[!", "[^", -1), name); ok {
					next = append(next, dir+name)
				}
			}
		}
		cur = cur[:0]
		for _, p := range next {
			cur = append(cur, p+"/")
		}
	}
	var out []string
	for _, p := range cur {
		p = strings.TrimSuffix(p, "/")
		if _, err := os.Lstat(p); err == nil && p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func dirNames(dir string) ([]string, error) {
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func unescapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// globTilde replaces a leading ~ or ~user; an unknown user leaves the
// pattern as it is, as GLOB_TILDE does.
func globTilde(p string, me local) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		if home = os.Getenv("HOME"); home == "" {
			home = me.home
		}
	} else if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	} else {
		return p
	}
	return home + "/" + rest
}
