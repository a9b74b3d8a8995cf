package profiles

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

var (
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// Record names (profiles, agents, hosts, secrets) and repository names:
	// one path segment, the state store's own rule.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

const (
	maxNameLen = 128
	maxKeyLen  = 256
)

// posixShells are the shells a profile may name. fish, csh and tcsh are not
// POSIX shells, so prepare scripts written for sh would break under them.
var posixShells = []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash"}

// ValidName reports whether s is a valid record, secret or repository name.
func ValidName(s string) bool { return len(s) <= maxNameLen && nameRE.MatchString(s) }

// ValidEnvKey reports whether key is a valid environment variable name.
func ValidEnvKey(key string) bool { return len(key) <= maxKeyLen && envKeyRE.MatchString(key) }

// IsReserved reports whether key belongs to the runtime: no user-authored
// origin may set it, the executor profile included.
// Keys keep their case, so kandev_x is not reserved.
func IsReserved(key string) bool {
	return strings.HasPrefix(key, "KANDEV_") || key == "TASK_DESCRIPTION"
}

// validator collects every problem of a document, reported in line order.
type validator struct {
	src  source
	errs []*DecodeError
}

func (v *validator) add(path, key, format string, args ...any) {
	v.errs = append(v.errs, v.src.errorf(path, key, format, args...))
}

func (v *validator) err() error {
	slices.SortStableFunc(v.errs, func(a, b *DecodeError) int { return a.Line - b.Line })
	if len(v.errs) == 1 {
		return v.errs[0]
	}
	errs := make([]error, len(v.errs))
	for i, e := range v.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

func (v *validator) name(path, key, what, s string) {
	switch {
	case s == "":
		v.add(path, key, "missing %q in %s", key, what)
	case !ValidName(s):
		v.add(path, key, "%s: %q %q is not a valid name (want [A-Za-z0-9][A-Za-z0-9._-]*, at most %d bytes)", what, key, s, maxNameLen)
	}
}

// Validate checks a profile. knownHost reports whether a host name exists;
// nil skips that one check (DecodeProfile uses nil, having no store).
// Errors are *DecodeError, joined when there are several.
func (p *Profile) Validate(knownHost func(string) bool) error {
	v := &validator{src: p.src}
	v.name("name", "name", "profile", p.Name)
	v.name("host", "host", "profile", p.Host)
	if ValidName(p.Host) && knownHost != nil && !knownHost(p.Host) {
		v.add("host", "host", "host %q is not a known host (add it with `kandev-exec host add %s`)", p.Host, p.Host)
	}
	if p.WorkdirRoot != "" && !validRoot(p.WorkdirRoot) {
		v.add("workdir_root", "workdir_root", `"workdir_root" must be ~, ~/PATH or /PATH, without empty, . or .. segments`)
	}
	if !slices.Contains(posixShells, p.Shell) {
		v.add("shell", "shell", "shell %q is not supported (want one of %s)", p.Shell, strings.Join(posixShells, ", "))
	}
	v.entries(p.Env, "env", "env", false)
	v.repositories(p.Repositories)
	if p.PrepareTimeout != "" {
		if d, err := time.ParseDuration(p.PrepareTimeout); err != nil || d < time.Second || d > 24*time.Hour {
			v.add("prepare_timeout", "prepare_timeout", `"prepare_timeout" must be a duration like 10m, between 1s and 24h`)
		}
	}
	for _, b := range []struct{ key, text string }{{"max_runtime", p.MaxRuntime}, {"idle_timeout", p.IdleTimeout}} {
		if _, err := ParseBound(b.text); err != nil {
			v.add(b.key, b.key, "%q %v", b.key, err)
		}
	}
	if p.ArchiveAfter != "" {
		if d, err := time.ParseDuration(p.ArchiveAfter); err != nil || d < time.Minute {
			v.add("archive_after", "archive_after", `"archive_after" must be a duration like 72h, at least 1m`)
		}
	}
	for _, s := range []struct{ key, text string }{{"prepare_script", p.PrepareScript}, {"cleanup_script", p.CleanupScript}} {
		if strings.IndexByte(s.text, 0) >= 0 {
			v.add(s.key, s.key, "%q contains a NUL byte", s.key)
		}
	}
	return v.err()
}

// CheckLaunchable refuses a profile no task could start from: without a
// repository and without a prepare script, a task directory would hold
// nothing to run in. `profile apply` calls it, so the mistake shows when
// the file is written rather than at the first launch.
func (p *Profile) CheckLaunchable() error {
	if len(p.Repositories) > 0 || strings.TrimSpace(p.PrepareScript) != "" {
		return nil
	}
	return &DecodeError{File: p.src.file, Key: "repositories",
		Msg: fmt.Sprintf("profile %q cannot launch: it has no repositories and no prepare_script; add a repository under \"repositories\" (`task launch --repo URL` can still replace its URL) or a prepare_script (see `kandev-exec help profile`)", p.Name)}
}

func (v *validator) repositories(repos []Repository) {
	seen := map[string]bool{}
	for i, r := range repos {
		at := fmt.Sprintf("repositories[%d]", i)
		v.name(at+".name", "name", at, r.Name)
		if seen[r.Name] && r.Name != "" {
			v.add(at+".name", "name", "%s: duplicate repository name %q", at, r.Name)
		}
		seen[r.Name] = true
		switch {
		case r.URL == "":
			v.add(at, "url", "%s: missing \"url\"", at)
		case r.URL[0] == '-' || hasControl(r.URL):
			// A leading "-" would reach git as an option.
			v.add(at+".url", "url", "%s: \"url\" must not start with - or hold control characters", at)
		}
		if r.Branch != "" && !validBranch(r.Branch) {
			v.add(at+".branch", "branch", "%s: branch %q is not a valid git branch name", at, r.Branch)
		}
		v.entries(r.Secrets, at+" secret", at+".secrets", true)
	}
}

// entries checks user-authored env entries. secretOnly is for repository
// bindings, which may hold only {secret: NAME}.
func (v *validator) entries(es []EnvEntry, what, path string, secretOnly bool) {
	seen := map[string]bool{}
	for _, e := range es {
		at := path + "." + e.Key
		if msg := keyProblem(e.Key); msg != "" {
			v.add(at, e.Key, "%s key %q %s", what, e.Key, msg)
		}
		if seen[e.Key] {
			v.add(at, e.Key, "duplicate %s key %q", what, e.Key)
		}
		seen[e.Key] = true
		if msg := entryProblem(e, secretOnly); msg != "" {
			v.add(at, e.Key, "%s %q: %s", what, e.Key, msg)
		}
	}
}

// keyProblem says what is wrong with a user-authored key, or "".
func keyProblem(key string) string {
	switch {
	case !ValidEnvKey(key):
		return fmt.Sprintf("is not a valid name (want [A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", maxKeyLen)
	case IsReserved(key):
		return "is reserved for the runtime (KANDEV_* and TASK_DESCRIPTION)"
	}
	return ""
}

// entryProblem says what is wrong with an entry's value, or "". It never
// quotes the value or the reference name. Empty and whitespace literals are
// values, not blanks to drop (DECISIONS.md, "Empty and whitespace values").
func entryProblem(e EnvEntry, secretOnly bool) string {
	if !e.Ref.IsSet() {
		switch {
		case secretOnly:
			return "repository bindings are secret-only: want {secret: NAME}, not a literal"
		case strings.IndexByte(e.Literal, 0) >= 0:
			return "value contains a NUL byte"
		}
		return ""
	}
	if e.Literal != "" {
		return "want exactly one of a literal or a reference"
	}
	if secretOnly && e.Ref.Kind != RefSecret {
		return fmt.Sprintf("repository bindings are secret-only: want {secret: NAME}, not {%s: ...}", e.Ref.Kind)
	}
	switch e.Ref.Kind {
	case RefSecret:
		if !ValidName(e.Ref.Name) {
			return "secret name is not valid (want [A-Za-z0-9][A-Za-z0-9._-]*)"
		}
	case RefFromEnv:
		if !ValidEnvKey(e.Ref.Name) {
			return "from_env must name a valid environment variable"
		}
	case RefFromFile:
		// Relative paths would depend on where a later launch runs from.
		if !(strings.HasPrefix(e.Ref.Name, "/") || strings.HasPrefix(e.Ref.Name, "~/")) || hasControl(e.Ref.Name) {
			return "from_file must be an absolute path or start with ~/"
		}
	default:
		return "unknown reference kind (want one of " + refForms + ")"
	}
	return ""
}

// Validate checks an agent preset.
func (a *AgentPreset) Validate() error {
	v := &validator{src: a.src}
	v.name("name", "name", "agent", a.Name)
	switch {
	case len(a.Command) == 0:
		v.add("command", "command", `"command" must list the program and its arguments`)
	case a.Command[0] == "":
		v.add("command[0]", "command", `"command" must start with a program name`)
	}
	for i, arg := range a.Command {
		if strings.IndexByte(arg, 0) >= 0 {
			at := fmt.Sprintf("command[%d]", i)
			v.add(at, "command", "%s contains a NUL byte", at)
		}
	}
	v.entries(a.Env, "env", "env", false)
	return v.err()
}

// ParseLaunchEnv reads `task launch --env K=V` flags into literal entries,
// in flag order. Keys follow the profile rules; a key given twice is an
// error rather than a silent last-one-wins. Errors never quote a value.
func ParseLaunchEnv(flags []string) ([]EnvEntry, error) {
	out := make([]EnvEntry, 0, len(flags))
	seen := map[string]bool{}
	for _, f := range flags {
		key, val, ok := strings.Cut(f, "=")
		bad := func(msg string) error {
			return &DecodeError{Key: key, Msg: fmt.Sprintf("--env %q: %s", key, msg)}
		}
		switch {
		case !ok:
			return nil, bad("want KEY=VALUE")
		case keyProblem(key) != "":
			return nil, bad("key " + keyProblem(key))
		case seen[key]:
			return nil, bad("given more than once")
		case strings.IndexByte(val, 0) >= 0:
			return nil, bad("value contains a NUL byte")
		}
		seen[key] = true
		out = append(out, EnvEntry{Key: key, Literal: val})
	}
	return out, nil
}

func validRoot(r string) bool {
	if r == "~" {
		return true
	}
	rest, ok := strings.CutPrefix(r, "~/")
	if !ok {
		rest, ok = strings.CutPrefix(r, "/")
	}
	if !ok || rest == "" || hasControl(rest) {
		return false // "/" alone is refused: reclamation works under <root>/tasks
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// validBranch is the subset of git check-ref-format that matters here:
// nothing git would read as an option, a revision expression or a path trick.
func validBranch(b string) bool {
	if b[0] == '-' || b[0] == '/' || b == "@" || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".") || strings.HasSuffix(b, ".lock") {
		return false
	}
	if strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") ||
		strings.ContainsAny(b, " ~^:?*[\\") || hasControl(b) {
		return false
	}
	for _, seg := range strings.Split(b, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// MaxBound is the longest max_runtime or idle_timeout a profile may set.
const MaxBound = 365 * 24 * time.Hour

// ParseBound reads a max_runtime or idle_timeout: "" is no bound (0),
// else a duration between 1s and MaxBound.
func ParseBound(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > MaxBound {
		return 0, fmt.Errorf("must be a duration like 2h, between 1s and %s, got %q", MaxBound, s)
	}
	return d, nil
}
