package sshconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// What ssh does between and after reading the files: take HostName into
// use, refuse what needs DNS, fill defaults and expand what `ssh -G` prints
// expanded.

// destination is the host name ssh connects to after the first pass:
// HostName with %h expanded (or the name as given), then canonicalHost.
func (p *cfgParser) destination() (string, error) {
	h, err := p.hostnameSoFar()
	if err != nil {
		return "", err
	}
	return canonicalHost(h), nil
}

// hostnameSoFar is what `Match host` compares: the final name in the
// final pass, else HostName expanded as far as the config has set it.
func (p *cfgParser) hostnameSoFar() (string, error) {
	h := p.s.first("hostname")
	switch {
	case p.final:
		return h, nil
	case h == "":
		return p.hostArg, nil
	}
	x, err := expand(h, hostnameTokens(p.hostArg), false)
	if err != nil {
		return "", p.errAt("hostname", fmt.Sprintf("HostName %v (HostName accepts %%%% and %%h)", err))
	}
	return x, nil
}

// refuseCanonicalization: resolving names through DNS the way ssh would
// is beyond a parser, so a config that asks for it needs `ssh -G`.
func (p *cfgParser) refuseCanonicalization() error {
	kw := ""
	switch {
	case p.s.first("canonicalizehostname") == "yes" || p.s.first("canonicalizehostname") == "always":
		kw = "canonicalizehostname"
	case p.s["canonicalizepermittedcnames"] != nil && !strings.EqualFold(p.s.first("canonicalizepermittedcnames"), "none"):
		kw = "canonicalizepermittedcnames"
	default:
		return nil
	}
	return p.errAt(kw, kw+" needs DNS lookups the built-in ssh config parser does not do; install an OpenSSH client so `ssh -G` resolves this host")
}

// finish fills ssh's defaults and expands what `ssh -G` prints expanded.
func (p *cfgParser) finish(host string) (settings, error) {
	s := p.s
	for k, v := range map[string]string{"user": p.me.name, "port": "22", "identitiesonly": "no"} {
		if s[k] == nil {
			s[k] = []string{v}
		}
	}
	if len(s["identityfile"]) == 0 {
		s["identityfile"] = append([]string{}, defaultIdentities...)
	}
	for _, k := range []string{"proxyjump", "proxycommand"} {
		if strings.EqualFold(s.first(k), "none") {
			delete(s, k)
		}
	}
	if a := s.first("hostkeyalias"); a != "" {
		s["hostkeyalias"] = []string{asciiLower(a)}
	}
	port, _ := strconv.Atoi(s.first("port"))
	if err := jumpLoop(s, host, port); err != nil {
		return nil, p.errAt("proxyjump", err.Error())
	}
	if a := s.first("identityagent"); a != "" {
		x, err := tildeExpand(a, p.me)
		if err == nil {
			keys := clientTokens(p.me, p.hostArg, host, s.first("hostkeyalias"), s.first("user"), port)
			x, err = expand(x, keys, true)
		}
		if err != nil {
			return nil, p.errAt("identityagent", "IdentityAgent "+err.Error())
		}
		s["identityagent"] = []string{x}
	}
	return s, nil
}

func validEnvName(s string) bool {
	for _, c := range []byte(s) {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}
