package sshconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ProxyJump entries, read the way OpenSSH reads them. ssh turns a
// ProxyJump into a ProxyCommand that runs ssh again for the last hop
// ("ssh -l USER -p PORT -J EARLIER LAST") and expands %h, %k, %n, %p and
// %r of the destination in it; the earlier hops travel on as -J and are
// expanded again by each inner ssh.

// jumpHop is one ProxyJump entry: the host to run ssh for, with the user
// and port given in the entry (0 = that hop's own config decides).
type jumpHop struct {
	user, host string
	port       int
}

var errJumpEntry = errors.New("want [user@]host[:port] or ssh://[user@]host[:port]")

// parseJumpEntry reads one entry: an ssh:// URI or [user@]host[:port],
// with an IPv6 address in brackets.
func parseJumpEntry(s string) (jumpHop, error) {
	if rest, ok := strings.CutPrefix(s, "ssh://"); ok {
		return parseJumpURI(rest)
	}
	var h jumpHop
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		if h.user, s = s[:i], s[i+1:]; h.user == "" {
			return h, errJumpEntry
		}
	}
	host, delim, tail, ok := hpdelim(s)
	if !ok || host == "" || delim == '/' {
		return h, errJumpEntry
	}
	h.host = cleanHostname(host)
	if tail != "" {
		if h.port = a2port(tail); h.port <= 0 {
			return h, fmt.Errorf("bad port %q", tail)
		}
	}
	return h, nil
}

// parseJumpURI reads ssh://[user[;params]@]host[:port][/]: the user may be
// percent-encoded, the host must be a plain domain name or IPv4 address.
func parseJumpURI(s string) (jumpHop, error) {
	var h jumpHop
	if i := strings.IndexByte(s, '@'); i >= 0 {
		u, _, _ := strings.Cut(s[:i], ";") // connection parameters are ignored
		var ok bool
		if h.user, ok = urlDecode(u); u == "" || !ok {
			return h, errJumpEntry
		}
		s = s[i+1:]
	}
	host, delim, tail, ok := hpdelim(s)
	if !ok || host == "" {
		return h, errJumpEntry
	}
	if h.host, ok = validDomain(cleanHostname(host)); !ok {
		return h, fmt.Errorf("%q is not a valid host name in an ssh:// URI", host)
	}
	if tail != "" && delim == ':' {
		port, after, slash := strings.Cut(tail, "/")
		if h.port = a2port(port); h.port <= 0 {
			return h, fmt.Errorf("bad port %q", port)
		}
		if tail = ""; slash {
			tail = after
		}
	}
	if tail != "" {
		return h, errors.New("a path is not allowed in a ProxyJump URI")
	}
	return h, nil
}

// hpdelim splits host from what follows ':' or '/' (an address in
// brackets may hold colons).
func hpdelim(s string) (host string, delim byte, tail string, ok bool) {
	k := strings.IndexAny(s, ":/")
	if strings.HasPrefix(s, "[") {
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return "", 0, "", false
		}
		k = j + 1
	}
	switch {
	case k < 0 || k == len(s):
		return s, 0, "", true
	case s[k] == ':' || s[k] == '/':
		return s[:k], s[k], s[k+1:], true
	}
	return "", 0, "", false
}

func cleanHostname(h string) string {
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// validDomain accepts letters, digits, '.', '-' and '_' (starting with a
// letter or digit, no empty label) and drops one trailing dot.
func validDomain(h string) (string, bool) {
	if h == "" || !isAlnum(h[0]) {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c == '.' && i > 0 && h[i-1] == '.') || !(isAlnum(c) || c == '.' || c == '-' || c == '_') {
			return "", false
		}
	}
	return strings.TrimSuffix(h, "."), true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// urlDecode undoes %XX and '+' (a space); a NUL ends the string, as in C.
func urlDecode(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			if v == 0 {
				return b.String(), true
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// normalizeJumps checks every entry of a ProxyJump list and returns the
// list as `ssh -G` prints it: the earlier entries as written, the last as
// user@host:port (a numeric host in brackets).
func normalizeJumps(v string) (string, error) {
	entries := strings.Split(v, ",")
	var last jumpHop
	for i, e := range entries {
		h, err := parseJumpEntry(e)
		if err != nil {
			return "", fmt.Errorf("entry %q: %v", e, err)
		}
		if i == len(entries)-1 {
			last = h
		}
	}
	out := formatHop(last)
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		out = v[:i] + "," + out
	}
	return out, nil
}

func formatHop(h jumpHop) string {
	host := h.host
	if strings.Contains(host, ":") || strings.Trim(host, "1234567890.") == "" {
		host = "[" + host + "]"
	}
	if h.user != "" {
		host = h.user + "@" + host
	}
	if h.port > 0 {
		host += ":" + strconv.Itoa(h.port)
	}
	return host
}

// jumpHops splits a resolved ProxyJump value into hops, first hop first,
// with the destination's tokens expanded as ssh's ProxyCommand would.
func jumpHops(v string, keys tokenKeys) ([]jumpHop, error) {
	entries := strings.Split(v, ",")
	hops := make([]jumpHop, 0, len(entries))
	for i, e := range entries {
		if i < len(entries)-1 {
			// An earlier hop is expanded here and again by the inner ssh:
			// a % that survives the first expansion would mean something
			// else the second time.
			x, err := expand(e, keys, false)
			if err != nil {
				return nil, fmt.Errorf("ProxyJump entry %q: %v", e, err)
			}
			if strings.Contains(x, "%") {
				return nil, fmt.Errorf("ProxyJump entry %q expands to %q; a %% in a hop before the last is expanded twice by OpenSSH, which kandev-exec does not support", e, x)
			}
			e = x
		}
		h, err := parseJumpEntry(e)
		if err != nil {
			return nil, fmt.Errorf("ProxyJump entry %q: %v", e, err)
		}
		if i == len(entries)-1 {
			if h.user, err = expand(h.user, keys, false); err == nil {
				h.host, err = expand(h.host, keys, false)
			}
			if err != nil {
				return nil, fmt.Errorf("ProxyJump entry %q: %v", e, err)
			}
		}
		if strings.ContainsAny(h.user, " \t\n$\\`*?[~#") {
			return nil, fmt.Errorf("ProxyJump user %q cannot be passed through OpenSSH's ProxyCommand unchanged", h.user)
		}
		hops = append(hops, h)
	}
	return hops, nil
}

// jumpLoop is ssh's own check that the last jump host is not the
// destination itself (same name, port and user).
func jumpLoop(s settings, host string, port int) error {
	v := s.first("proxyjump")
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	h, err := parseJumpEntry(v[strings.LastIndexByte(v, ',')+1:])
	if err != nil {
		return err
	}
	if h.port <= 0 {
		h.port = 22
	}
	if h.user == "" {
		h.user = s.first("user")
	}
	if h.host == host && h.port == port && h.user == s.first("user") {
		return fmt.Errorf("jumphost loop via %s", h.host)
	}
	return nil
}
