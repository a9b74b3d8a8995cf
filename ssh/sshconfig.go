package ssh

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The fallback parser for machines without an OpenSSH client. It follows
// ssh_config(5) for the keywords kandev-exec uses and knows the rest by
// name; anything it cannot honour is an error naming file and line, never a
// silent fallback to "no config".

// used are the keywords that change how kandev-exec connects.
var used = map[string]bool{
	"hostname": true, "port": true, "user": true, "identityfile": true, "identitiesonly": true,
	"identityagent": true, "proxyjump": true, "proxycommand": true, "connecttimeout": true,
}

// known are valid OpenSSH keywords that do not change how kandev-exec dials.
var known = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`addkeystoagent addressfamily batchmode bindaddress bindinterface
		canonicaldomains canonicalizefallbacklocal canonicalizehostname canonicalizemaxdots
		canonicalizepermittedcnames casignaturealgorithms certificatefile checkhostip ciphers
		clearallforwardings compression connectionattempts controlmaster controlpath controlpersist
		dynamicforward enableescapecommandline enablesshkeysign escapechar exitonforwardfailure
		fingerprinthash forkafterauthentication forwardagent forwardx11 forwardx11timeout
		forwardx11trusted gatewayports globalknownhostsfile gssapiauthentication
		gssapidelegatecredentials hashknownhosts hostbasedacceptedalgorithms hostbasedauthentication
		hostbasedkeytypes hostkeyalgorithms hostkeyalias ignoreunknown ipqos kbdinteractiveauthentication
		kbdinteractivedevices kexalgorithms knownhostscommand localcommand localforward loglevel
		logverbose macs nohostauthenticationforlocalhost numberofpasswordprompts passwordauthentication
		permitlocalcommand permitremoteopen pkcs11provider preferredauthentications
		pubkeyacceptedalgorithms pubkeyacceptedkeytypes pubkeyauthentication rekeylimit remotecommand
		remoteforward requesttty requiredrsasize revokedhostkeys securitykeyprovider sendenv
		serveraliveinterval serveralivecountmax sessiontype setenv stdinnull streamlocalbindmask
		streamlocalbindunlink stricthostkeychecking syslogfacility tag tcpkeepalive tunnel
		tunneldevice updatehostkeys usekeychain userknownhostsfile verifyhostkeydns visualhostkey
		xauthlocation obscurekeystroketiming channeltimeout challengeresponseauthentication
		proxyusefdpass gssapikeyexchange gssapiclientidentity gssapiserveridentity gssapirenewalforcesrekey
		gssapitrustdns protocol rsaauthentication rhostsrsaauthentication useroaming compressionlevel cipher
		fallbacktorsh usersh useprivilegedport pubkeyacceptedkeytypes identitiesonly requiredrsasize
		enablesshkeysign versionaddendum hostkeyalgorithms`) {
		known[k] = true
	}
}

type cfgParser struct {
	name    string // as typed
	final   bool   // second pass: `Match final` blocks apply
	s       settings
	ignore  []string
	sawLate bool // a Match final/canonical block exists
	depth   int
}

// parseConfigFor returns the settings for name from file (or the user's
// and the system's default files when file is empty).
func parseConfigFor(name, file string) (settings, error) {
	var files []string
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, &ConfigError{File: file, Msg: "cannot read ssh config: " + err.Error()}
		}
		files = []string{file}
	} else {
		home, _ := os.UserHomeDir()
		files = []string{filepath.Join(home, ".ssh", "config"), "/etc/ssh/ssh_config"}
	}
	p := &cfgParser{name: name, s: settings{}}
	for pass := 0; pass < 2; pass++ {
		p.final = pass == 1
		for _, f := range files {
			if err := p.file(f); err != nil {
				return nil, err
			}
		}
		if !p.sawLate {
			break
		}
	}
	if len(p.s["identityfile"]) == 0 {
		p.s["identityfile"] = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"}
	}
	return p.s, nil
}

func (p *cfgParser) file(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return &ConfigError{File: path, Msg: err.Error()}
	}
	defer f.Close()
	active := true
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		kw, args, err := splitLine(sc.Text())
		if err != nil {
			return &ConfigError{File: path, Line: line, Msg: err.Error()}
		}
		if kw == "" {
			continue
		}
		if err := p.directive(path, line, kw, args, &active); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &ConfigError{File: path, Msg: err.Error()}
	}
	return nil
}

func (p *cfgParser) directive(path string, line int, kw string, args []string, active *bool) error {
	fail := func(format string, a ...any) error {
		return &ConfigError{File: path, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	switch kw {
	case "host":
		*active = matchPatterns(p.name, args)
		return nil
	case "match":
		ok, err := p.match(args)
		if err != nil {
			return fail("%v", err)
		}
		*active = ok
		return nil
	case "include":
		return p.include(path, line, args, *active)
	case "ignoreunknown":
		for _, a := range args {
			p.ignore = append(p.ignore, strings.ToLower(a)) // matched case-insensitively
		}
		return nil
	}
	if !used[kw] && !known[kw] {
		if matchPatterns(kw, p.ignore) {
			return nil
		}
		return fail("unsupported ssh config keyword %q", kw)
	}
	if !*active || !used[kw] {
		return nil
	}
	if len(args) == 0 {
		return fail("%s needs a value", kw)
	}
	if kw == "identityfile" {
		p.s[kw] = append(p.s[kw], args[0])
	} else if _, set := p.s[kw]; !set {
		// First obtained value wins, as in OpenSSH.
		p.s[kw] = []string{strings.Join(args, " ")}
	}
	return nil
}

func (p *cfgParser) include(path string, line int, args []string, active bool) error {
	if p.depth > 16 {
		return &ConfigError{File: path, Line: line, Msg: "Include nested too deeply"}
	}
	home, _ := os.UserHomeDir()
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "~/"):
			a = filepath.Join(home, a[2:])
		case filepath.IsAbs(a):
		case strings.HasPrefix(path, "/etc/ssh/"):
			// Relative includes are relative to /etc/ssh for the system
			// file and to ~/.ssh otherwise, as in ssh_config(5).
			a = filepath.Join("/etc/ssh", a)
		default:
			a = filepath.Join(home, ".ssh", a)
		}
		matches, err := filepath.Glob(a)
		if err != nil {
			return &ConfigError{File: path, Line: line, Msg: "bad Include pattern: " + err.Error()}
		}
		sort.Strings(matches)
		for _, m := range matches {
			if !active {
				continue
			}
			p.depth++
			err := p.file(m)
			p.depth--
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// match evaluates a Match line's criteria (all must hold).
func (p *cfgParser) match(args []string) (bool, error) {
	if len(args) == 0 {
		return false, fmt.Errorf("Match needs criteria")
	}
	result := true
	for i := 0; i < len(args); i++ {
		crit := strings.ToLower(args[i])
		neg := strings.HasPrefix(crit, "!")
		crit = strings.TrimPrefix(crit, "!")
		var ok bool
		switch crit {
		case "all":
			ok = true
		case "final", "canonical":
			p.sawLate = true
			ok = p.final
		case "host", "originalhost", "user", "localuser":
			if i+1 >= len(args) {
				return false, fmt.Errorf("Match %s needs an argument", crit)
			}
			i++
			pats := strings.Split(args[i], ",")
			switch crit {
			case "host":
				host := p.name
				if h := p.s.first("hostname"); h != "" {
					host = h
				}
				ok = matchPatterns(host, pats)
			case "originalhost":
				ok = matchPatterns(p.name, pats)
			case "user":
				u := p.s.first("user")
				if u == "" {
					u = currentUser()
				}
				ok = matchPatterns(u, pats)
			case "localuser":
				ok = matchPatterns(currentUser(), pats)
			}
		default:
			return false, fmt.Errorf("unsupported Match criterion %q (install an OpenSSH client so `ssh -G` can evaluate it)", crit)
		}
		if neg {
			ok = !ok
		}
		result = result && ok
	}
	return result, nil
}

// matchPatterns applies an ssh_config pattern list: any positive match and
// no negated match.
func matchPatterns(s string, pats []string) bool {
	hit := false
	for _, pat := range pats {
		for _, one := range strings.Split(pat, ",") {
			neg := strings.HasPrefix(one, "!")
			ok, _ := filepath.Match(strings.TrimPrefix(one, "!"), s)
			if ok && neg {
				return false
			}
			hit = hit || ok
		}
	}
	return hit
}

// splitLine returns the lower-cased keyword and its arguments, honouring
// `key=value`, double quotes and comments.
func splitLine(l string) (string, []string, error) {
	l = strings.TrimSpace(l)
	if l == "" || strings.HasPrefix(l, "#") {
		return "", nil, nil
	}
	i := strings.IndexAny(l, " \t=")
	if i < 0 {
		return strings.ToLower(l), nil, nil
	}
	kw := strings.ToLower(l[:i])
	rest := strings.TrimLeft(l[i:], " \t")
	rest = strings.TrimLeft(strings.TrimPrefix(rest, "="), " \t")
	var args []string
	for rest != "" {
		if rest[0] == '#' {
			break
		}
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return "", nil, fmt.Errorf("unterminated quote")
			}
			args = append(args, rest[1:end+1])
			rest = strings.TrimLeft(rest[end+2:], " \t")
			continue
		}
		j := strings.IndexAny(rest, " \t")
		if j < 0 {
			j = len(rest)
		}
		args = append(args, rest[:j])
		rest = strings.TrimLeft(rest[j:], " \t")
	}
	return kw, args, nil
}
