package sshconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// The fallback parser for machines without an OpenSSH client. It follows
// what OpenSSH's client does (checked against `ssh -G` of OpenSSH 9.2 by
// TestParserDifferential) for the keywords kandev-exec uses, and knows the
// rest by name. What it cannot honour is an error naming file and line,
// never a silent fallback: `Match exec` and hostname canonicalization need
// a real client. It does not check the permissions of the files it reads,
// and it does not validate the values of keywords that do not change how
// kandev-exec dials.

// used are the keywords that change how kandev-exec connects.
var used = map[string]bool{
	"hostname": true, "port": true, "user": true, "identityfile": true, "identitiesonly": true,
	"identityagent": true, "proxyjump": true, "proxycommand": true, "connecttimeout": true, "certificatefile": true,
	"controlmaster": true, "controlpath": true, "controlpersist": true,
}

// known are valid keywords that do not change how kandev-exec dials. A few
// (tag, usekeychain, obscurekeystroketiming, channeltimeout, the GSSAPI
// key exchange family) come from newer or vendor builds; they are accepted
// so one config serves every machine, although OpenSSH 9.2 rejects them.
var known = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`addkeystoagent addressfamily batchmode bindaddress bindinterface
		canonicaldomains canonicalizefallbacklocal canonicalizemaxdots casignaturealgorithms
		checkhostip ciphers clearallforwardings compression connectionattempts
		dynamicforward enableescapecommandline
		enablesshkeysign escapechar exitonforwardfailure fingerprinthash forkafterauthentication
		forwardagent forwardx11 forwardx11timeout forwardx11trusted gatewayports globalknownhostsfile
		gssapiauthentication gssapidelegatecredentials hashknownhosts hostbasedacceptedalgorithms
		hostbasedauthentication hostbasedkeytypes hostkeyalgorithms ipqos kbdinteractiveauthentication
		kbdinteractivedevices kexalgorithms knownhostscommand localcommand localforward loglevel
		logverbose macs nohostauthenticationforlocalhost numberofpasswordprompts passwordauthentication
		permitlocalcommand permitremoteopen pkcs11provider preferredauthentications
		pubkeyacceptedalgorithms pubkeyacceptedkeytypes pubkeyauthentication rekeylimit remotecommand
		remoteforward requesttty requiredrsasize securitykeyprovider sendenv
		serveraliveinterval serveralivecountmax sessiontype setenv stdinnull streamlocalbindmask
		streamlocalbindunlink stricthostkeychecking syslogfacility tcpkeepalive tunnel tunneldevice
		updatehostkeys userknownhostsfile verifyhostkeydns visualhostkey xauthlocation
		challengeresponseauthentication protocol cipher fallbacktorsh usersh
		useprivilegedport useroaming globalknownhostsfile2 userknownhostsfile2 rhostsauthentication
		afstokenpassing kerberosauthentication kerberostgtpassing rsaauthentication
		rhostsrsaauthentication compressionlevel smartcarddevice skeyauthentication
		tisauthentication dsaauthentication keepalive
		tag usekeychain obscurekeystroketiming channeltimeout versionaddendum gssapikeyexchange
		gssapiclientidentity gssapiserveridentity gssapirenewalforcesrekey gssapitrustdns`) {
		known[k] = true
	}
}

// keywordAlias maps obsolete spellings OpenSSH still reads as another keyword.
var keywordAlias = map[string]string{"identityfile2": "identityfile"}

// tracked are the keywords the parser keeps besides used: %k and host
// certificates need the host key alias, host keys are checked against
// RevokedHostKeys, and canonicalization and ProxyUseFdpass must be
// refused, not ignored.
var tracked = map[string]bool{"hostkeyalias": true, "canonicalizehostname": true, "canonicalizepermittedcnames": true,
	"proxyusefdpass": true, "revokedhostkeys": true}

// defaultIdentities are the files ssh tries when no IdentityFile is set.
var defaultIdentities = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk",
	"~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk", "~/.ssh/id_xmss", "~/.ssh/id_dsa"}

const (
	maxIncludeDepth = 16
	maxFiles        = 100 // of IdentityFile, and of CertificateFile
)

type cfgParser struct {
	me        local
	hostArg   string // the name as given: %n, Match originalhost
	host      string // what Host lines match: hostArg, then the final host name
	final     bool   // the second pass, after HostName took effect
	wantFinal bool   // some Match line says `final`
	s         settings
	at        map[string]cfgPos // where each kept value was set, for later errors
	ignore    *string           // IgnoreUnknown's patterns, first active value
}

// cfgPos is a file and line, to name in an error found after reading.
type cfgPos struct {
	file string
	line int
}

// errAt is an error about the value of kw, naming where it was set.
func (p *cfgParser) errAt(kw, msg string) error {
	return &ConfigError{File: p.at[kw].file, Line: p.at[kw].line, Msg: msg}
}

// cfgFile is one file being read and how it was reached.
type cfgFile struct {
	path       string
	user       bool // a user's config: ~ allowed, relative Include under ~/.ssh
	neverMatch bool // included from an inactive block: checked, never applied
}

// parseConfigFor returns the settings for name, as `ssh -G` prints them,
// from file (or the user's and the system's default files when empty).
// ov are applied as ssh's command-line options would be: before any file,
// so they win.
func parseConfigFor(name string, ov Overrides, file string) (settings, error) {
	me := currentLocal()
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, &ConfigError{File: file, Msg: "cannot read ssh config: " + err.Error()}
		}
	}
	files := configFiles(file, me)
	p := &cfgParser{me: me, hostArg: name, host: name, s: settings{}, at: map[string]cfgPos{}}
	if err := p.commandLine(ov); err != nil {
		return nil, err
	}
	if err := p.readAll(files); err != nil {
		return nil, err
	}
	host, err := p.destination()
	if err != nil {
		return nil, err
	}
	if err := p.refuseCanonicalization(); err != nil {
		return nil, err
	}
	p.s["hostname"] = []string{host}
	if p.wantFinal {
		p.final, p.host = true, host
		if err := p.readAll(files); err != nil {
			return nil, err
		}
		if err := p.refuseCanonicalization(); err != nil {
			return nil, err
		}
	}
	return p.finish(host)
}

func (p *cfgParser) readAll(files []cfgFile) error {
	for i := range files {
		active := true
		if err := p.file(&files[i], &active, 0); err != nil {
			return err
		}
	}
	return nil
}

// commandLine applies the explicit settings first, as `ssh -l -p -o -J`
// would (sshg.go's commandLine builds the same for `ssh -G`).
func (p *cfgParser) commandLine(ov Overrides) error {
	if ov.User != "" {
		p.s["user"] = []string{ov.User}
	}
	if ov.Port != 0 {
		p.s["port"] = []string{strconv.Itoa(ov.Port)}
	}
	if ov.IdentitiesOnly {
		p.s["identitiesonly"] = []string{"yes"}
	}
	if ov.direct() {
		p.s["proxycommand"] = []string{"none"}
		return nil
	}
	if ov.ProxyJump == "" {
		return nil
	}
	active := true
	return p.line(&cfgFile{path: "--proxy-jump", user: true}, 0, "ProxyJump="+ov.ProxyJump, &active, 0)
}

func (p *cfgParser) file(f *cfgFile, active *bool, depth int) error {
	if depth > maxIncludeDepth {
		return &ConfigError{File: f.path, Msg: fmt.Sprintf("Include nested more than %d deep (a loop?)", maxIncludeDepth)}
	}
	data, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR):
		return nil // ssh skips a vanished file and reads a directory as empty
	case err != nil:
		return &ConfigError{File: f.path, Msg: "cannot read ssh config: " + err.Error()}
	}
	for n, l := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(l, 0); i >= 0 {
			l = l[:i] // C reads a line only up to a NUL
		}
		if err := p.line(f, n+1, l, active, depth); err != nil {
			return err
		}
	}
	return nil
}

// set keeps the first value obtained for kw, as OpenSSH does.
func (p *cfgParser) set(kw, v string, f *cfgFile, line int) {
	if _, ok := p.s[kw]; !ok {
		p.s[kw] = []string{v}
		p.at[kw] = cfgPos{f.path, line}
	}
}

func (p *cfgParser) line(f *cfgFile, n int, text string, active *bool, depth int) error {
	kw, rest, args, lexErr := lexLine(text)
	if kw == "" {
		return nil
	}
	fail := func(format string, a ...any) error {
		return &ConfigError{File: f.path, Line: n, Msg: fmt.Sprintf(format, a...)}
	}
	if rest == "" {
		return fail("no argument after keyword %q", kw)
	}
	if a, ok := keywordAlias[kw]; ok {
		kw = a
	}
	structural := kw == "host" || kw == "match" || kw == "include" || kw == "ignoreunknown"
	if !structural && !used[kw] && !tracked[kw] && !known[kw] {
		if p.ignore != nil && matchPatternList(kw, *p.ignore, true) == 1 {
			return nil
		}
		return fail("unsupported ssh config keyword %q", kw)
	}
	if lexErr != nil {
		return fail("%v", lexErr)
	}
	switch kw {
	case "host":
		return p.hostLine(args, f, active, fail)
	case "match":
		return p.matchLine(rest, f, active, fail)
	case "include":
		return p.include(args, f, active, depth, fail)
	case "proxyjump":
		return p.proxyJump(args, rest, f, n, *active, fail)
	case "proxycommand":
		if *active {
			p.set(kw, strings.TrimLeft(rest, cfgSpace+"="), f, n)
		}
		return nil
	}
	if used[kw] || tracked[kw] || kw == "ignoreunknown" {
		return p.single(kw, args, f, n, *active, fail)
	}
	return nil // known, and irrelevant to dialling: not validated
}

// single handles a keyword with one argument: checked in any block, kept
// when active and first.
func (p *cfgParser) single(kw string, args []string, f *cfgFile, n int, active bool, fail func(string, ...any) error) error {
	if len(args) == 0 || args[0] == "" {
		return fail("%s: missing argument", kw)
	}
	if len(args) > 1 && kw != "canonicalizepermittedcnames" {
		return fail("keyword %s extra arguments at end of line", kw)
	}
	v, err := p.value(kw, args[0])
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case !active || v == "":
	case kw == "identityfile" || kw == "certificatefile":
		return p.addFile(kw, v, fail)
	case kw == "ignoreunknown":
		if p.ignore == nil {
			p.ignore = &v
		}
	default:
		p.set(kw, v, f, n)
	}
	return nil
}

// value checks one keyword's argument the way ssh does, in any block,
// and returns what to keep ("" keeps nothing, as ConnectTimeout none).
func (p *cfgParser) value(kw, arg string) (string, error) {
	switch kw {
	case "port":
		n := a2port(arg)
		if n <= 0 {
			return "", fmt.Errorf("bad port %q", arg)
		}
		return strconv.Itoa(n), nil
	case "identitiesonly":
		return yesNo("IdentitiesOnly", arg)
	case "proxyusefdpass":
		return yesNo("ProxyUseFdpass", arg)
	case "connecttimeout":
		if arg == "none" {
			return "", nil // leaves it unset: a later line may still set it
		}
		n := convtime(arg)
		if n < 0 {
			return "", fmt.Errorf("ConnectTimeout: invalid time value %q", arg)
		}
		return strconv.Itoa(n), nil
	case "identityagent":
		if _, err := expand(arg, nil, true); err != nil {
			return "", fmt.Errorf("IdentityAgent: invalid environment expansion %q: %v", arg, err)
		}
		if len(arg) > 1 && arg[0] == '$' && arg[1] != '{' && !validEnvName(arg[1:]) {
			return "", fmt.Errorf("IdentityAgent: invalid environment name %q", arg)
		}
	case "canonicalizehostname":
		switch v := asciiLower(arg); v {
		case "yes", "true":
			return "yes", nil
		case "no", "false", "always":
			return v, nil
		}
		return "", fmt.Errorf("CanonicalizeHostname: unsupported option %q", arg)
	case "controlmaster":
		switch v := asciiLower(arg); v {
		case "yes", "true":
			return "true", nil
		case "no", "false", "auto", "ask", "autoask":
			return v, nil
		}
		return "", fmt.Errorf("ControlMaster: unsupported option %q", arg)
	case "controlpersist":
		switch v := asciiLower(arg); v {
		case "yes", "true":
			return "yes", nil
		case "no", "false":
			return "no", nil
		}
		n := convtime(arg)
		if n < 0 {
			return "", fmt.Errorf("ControlPersist: invalid time value %q", arg)
		}
		return strconv.Itoa(n), nil
	}
	return arg, nil
}

// yesNo reads a flag keyword's argument as ssh does.
func yesNo(keyword, arg string) (string, error) {
	switch asciiLower(arg) {
	case "yes", "true":
		return "yes", nil
	case "no", "false":
		return "no", nil
	}
	return "", fmt.Errorf("%s: unsupported option %q (yes or no)", keyword, arg)
}

// addFile keeps one more IdentityFile or CertificateFile: every value
// counts, in order, once each.
func (p *cfgParser) addFile(kw, v string, fail func(string, ...any) error) error {
	for _, have := range p.s[kw] {
		if have == v {
			return nil
		}
	}
	if len(p.s[kw]) >= maxFiles {
		return fail("too many %s values (at most %d)", kw, maxFiles)
	}
	p.s[kw] = append(p.s[kw], v)
	return nil
}

// proxyJump checks every hop in any block; the first active ProxyJump or
// ProxyCommand wins, and "none" still lets a later ProxyCommand apply.
// Like OpenSSH 9.2, it reads the raw text up to the first blank: quotes
// stay part of the value and '#' ends it.
func (p *cfgParser) proxyJump(args []string, rest string, f *cfgFile, n int, active bool, fail func(string, ...any) error) error {
	if len(args) == 0 {
		return fail("proxyjump: missing argument")
	}
	raw := strings.TrimLeft(rest, cfgSpace+"=")
	v := raw
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		v = v[:i]
	}
	v, _, _ = strings.Cut(v, "#")
	// Only the whole text "none" means none; "none # why" names a host.
	if strings.EqualFold(raw, "none") {
		if active && p.s["proxycommand"] == nil {
			p.set("proxyjump", "none", f, n)
		}
		return nil
	}
	norm, err := normalizeJumps(v)
	if err != nil {
		return fail("invalid ProxyJump %q: %v", v, err)
	}
	if active && p.s["proxycommand"] == nil && p.s["proxyjump"] == nil {
		p.set("proxyjump", norm, f, n)
		p.s["proxycommand"] = []string{"none"}
	}
	return nil
}

func (p *cfgParser) hostLine(args []string, f *cfgFile, active *bool, fail func(string, ...any) error) error {
	*active = false
	for _, a := range args {
		if a == "" {
			return fail("keyword host empty argument")
		}
		if f.neverMatch {
			break
		}
		neg := a[0] == '!'
		if neg {
			a = a[1:]
		}
		if MatchPattern(p.host, a) {
			if neg {
				*active = false
				break
			}
			*active = true
		}
	}
	return nil
}
