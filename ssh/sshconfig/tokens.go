package sshconfig

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Token expansion and value conversions exactly as OpenSSH's client does
// them, so the built-in parser and `ssh -G` agree (ssh_config(5), TOKENS).

// local is who runs kandev-exec, as OpenSSH sees it: home and name come
// from the password database, not $HOME.
type local struct {
	name, home, uid string
	host            string // gethostname(), %l; %L is its first label
}

func currentLocal() local {
	l := local{uid: strconv.Itoa(os.Getuid())}
	if u, err := user.Current(); err == nil {
		l.name, l.home = u.Username, u.HomeDir
	} else {
		l.name, l.home = os.Getenv("USER"), os.Getenv("HOME")
	}
	l.host, _ = os.Hostname()
	return l
}

func currentUser() string { return currentLocal().name }

// tildeHome is what a leading ~ or ~user stands for in IdentityFile and
// IdentityAgent: the password database's home, with a trailing slash
// when the path is only "~".
func tildeExpand(p string, me local) (string, error) {
	if !strings.HasPrefix(p, "~") {
		return p, nil
	}
	rest := p[1:]
	home := me.home
	if rest != "" && rest[0] != '/' {
		name, path, _ := strings.Cut(rest, "/")
		u, err := user.Lookup(name)
		if err != nil {
			return "", fmt.Errorf("%q: no such user %q", p, name)
		}
		home, rest = u.HomeDir, path
	}
	rest = strings.TrimLeft(rest, "/")
	if !strings.HasSuffix(home, "/") {
		home += "/"
	}
	return home + rest, nil
}

// tokenKeys are the %-tokens one keyword accepts, with their values.
type tokenKeys map[byte]string

// expand replaces %-tokens (and ${VAR} when dollar) in one left-to-right
// pass. A token the keyword does not accept, a lone trailing % or an
// unset variable is an error, as in OpenSSH.
func expand(s string, keys tokenKeys, dollar bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if dollar && c == '$' && i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("environment variable %q is missing its closing '}'", s[i:])
			}
			name := s[i+2 : i+2+end]
			if name == "" {
				return "", fmt.Errorf("empty environment variable name in %q", s)
			}
			v, ok := os.LookupEnv(name)
			if !ok {
				return "", fmt.Errorf("environment variable ${%s} is not set", name)
			}
			b.WriteString(v)
			i += 2 + end
			continue
		}
		if c != '%' || keys == nil {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("%q ends in a lone %%", s)
		}
		if s[i] == '%' {
			b.WriteByte('%')
			continue
		}
		v, ok := keys[s[i]]
		if !ok {
			return "", fmt.Errorf("%q: unknown token %%%c", s, s[i])
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// hostnameTokens are HostName's: %h is the name as typed.
func hostnameTokens(hostArg string) tokenKeys { return tokenKeys{'h': hostArg} }

// clientTokens are the tokens of IdentityFile, IdentityAgent and the other
// local paths, for the connection to host:port as user.
func clientTokens(me local, hostArg, host, keyAlias, user string, port int) tokenKeys {
	p := strconv.Itoa(port)
	short, _, _ := strings.Cut(me.host, ".")
	if keyAlias == "" {
		keyAlias = hostArg
	}
	sum := sha1.Sum([]byte(me.host + host + p + user))
	return tokenKeys{'C': hex.EncodeToString(sum[:]), 'L': short, 'i': me.uid, 'k': keyAlias,
		'l': me.host, 'n': hostArg, 'p': p, 'd': me.home, 'h': host, 'r': user, 'u': me.name}
}

// proxyTokens are ProxyJump's (OpenSSH builds a ProxyCommand from it and
// expands that): %h, %k, %n, %p and %r of the destination.
func proxyTokens(hostArg, host, keyAlias, user string, port int) tokenKeys {
	if keyAlias == "" {
		keyAlias = hostArg
	}
	return tokenKeys{'h': host, 'k': keyAlias, 'n': hostArg, 'p': strconv.Itoa(port), 'r': user}
}

// a2port reads a port number or a service name; 0 means invalid.
func a2port(s string) int {
	if n, ok := strtonum(s, 0, 65535); ok {
		return int(n)
	}
	if s != asciiLower(s) {
		return 0 // getservbyname is case-sensitive
	}
	if p, err := net.LookupPort("tcp", s); err == nil && p > 0 {
		return p
	}
	return 0
}

// strtonum accepts what strtoll does in base 10 (an optional sign), with
// nothing after the digits.
func strtonum(s string, lo, hi int64) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil || strings.HasPrefix(s, "+-") || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// convtime reads an OpenSSH time value ("90", "1m30s", "1h"): seconds, or
// -1 when invalid.
func convtime(s string) int {
	const maxInt = 1<<31 - 1
	if s == "" {
		return -1
	}
	total := 0
	for s != "" {
		i := 0
		if s[0] == '+' || s[0] == '-' {
			i = 1
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		secs, err := strconv.ParseInt(strings.TrimPrefix(s[:i], "+"), 10, 64)
		if err != nil || secs < 0 {
			return -1
		}
		mult := int64(1)
		if i < len(s) {
			switch s[i] {
			case 's', 'S':
			case 'm', 'M':
				mult = 60
			case 'h', 'H':
				mult = 3600
			case 'd', 'D':
				mult = 86400
			case 'w', 'W':
				mult = 7 * 86400
			default:
				return -1
			}
			i++
		}
		if secs > maxInt/mult || int64(total) > maxInt-secs*mult {
			return -1
		}
		total += int(secs * mult)
		s = s[i:]
	}
	return total
}

// canonicalHost is what ssh does to the destination name before using
// it: anything that looks like an address (a '%' or ':', or only digits
// and dots) keeps its case and is rewritten only when it parses as one
// (inet_aton forms such as 10.1 included); other names are lower-cased.
func canonicalHost(h string) string {
	canon := ""
	if a, ok := inetAton(h); ok {
		canon = a.String()
	} else if a, err := netip.ParseAddr(h); err == nil && a.Is6() && a.Zone() == "" {
		canon = ntop6(a)
	}
	switch {
	case canon != "" && !strings.EqualFold(canon, h):
		return canon
	case canon != "" || strings.ContainsAny(h, "%:") || strings.Trim(h, "0123456789.") == "":
		return h
	}
	return asciiLower(h)
}

// ntop6 writes an IPv6 address as the C library does, which differs from
// netip only for IPv4-compatible addresses (::a.b.c.d).
func ntop6(a netip.Addr) string {
	b := a.As16()
	if b == [16]byte{} || a.Is4In6() {
		return a.String()
	}
	for _, c := range b[:12] {
		if c != 0 {
			return a.String()
		}
	}
	if b[12] == 0 && b[13] == 0 {
		return a.String() // ::1, ::ffff: the zero run is longer
	}
	return "::" + netip.AddrFrom4([4]byte(b[12:])).String()
}

// inetAton parses the IPv4 forms the C library accepts as numeric: one
// to four parts, each decimal, octal (leading 0) or hex (0x), the last
// filling the remaining bytes.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, 0, 4)
	for _, p := range parts {
		if p == "" || p[0] < '0' || p[0] > '9' {
			return netip.Addr{}, false
		}
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// validHostArg is the check ssh applies to the destination it is given
// (and so to every jump host it runs itself for).
func validHostArg(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte("'`\"$\\;&<>|(){},", c) >= 0 || c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// validRemoteUser is the check ssh applies to a user given with -l (and
// so to a jump host's user).
func validRemoteUser(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte("'`\";&<>|(){}", c) >= 0 {
			return false
		}
		if (c == ' ' || (c >= '\t' && c <= '\r')) && i+1 < len(s) && s[i+1] == '-' {
			return false
		}
		if c == '\\' && i+1 == len(s) {
			return false
		}
	}
	return true
}
