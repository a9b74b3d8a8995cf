package executor

import (
	"context"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// Requirement is one thing a host must have for kandev-exec to work
// there, as `host test` reports it.
type Requirement struct {
	Name    string `json:"name"`    // sh, uname, "gzip or sftp", "sha256sum or shasum", git
	Present bool   `json:"present"` // found on the login user's PATH (or SFTP served)
	Found   string `json:"found"`   // what was found: a command's path, or "sftp"
	// Profiles are this host's profiles that need it: all of them, but
	// for git only those that check a repository out.
	Profiles []string `json:"profiles"`
}

// requirementsScript prints, for each command a host may need, where the
// login user's PATH finds it ("" when it does not).
const requirementsScript = `for c in sh uname gzip sha256sum shasum git; do printf 'cmd_%s=%s\n' "$c" "$(command -v "$c" 2>/dev/null)"; done
`

// requirements reads what requirementsScript printed (kv) and says which
// of h's profiles need each thing; SFTP is asked for only when gzip is
// missing, the one case the helper upload needs it.
func requirements(ctx context.Context, c *ssh.Client, kv map[string]string, ps []*profiles.Profile) []Requirement {
	all, withRepo := []string{}, []string{}
	for _, p := range ps {
		all = append(all, p.Name)
		if len(p.Repositories) > 0 {
			withRepo = append(withRepo, p.Name)
		}
	}
	one := func(name string, profiles []string, cmds ...string) Requirement {
		r := Requirement{Name: name, Profiles: profiles}
		for _, cmd := range cmds {
			if found := kv["cmd_"+cmd]; found != "" && !r.Present {
				r.Present, r.Found = true, found
			}
		}
		return r
	}
	upload := one("gzip or sftp", all, "gzip")
	if !upload.Present && c.SFTPServed(ctx) == nil {
		upload.Present, upload.Found = true, "sftp"
	}
	return []Requirement{
		one("sh", all, "sh"),
		one("uname", all, "uname"),
		upload,
		one("sha256sum or shasum", all, "sha256sum", "shasum"),
		one("git", withRepo, "git"),
	}
}

// hostProfiles are those of ps that launch on h, by name.
func hostProfiles(h *records.Host, ps []*profiles.Profile) []*profiles.Profile {
	ps = slices.DeleteFunc(slices.Clone(ps), func(p *profiles.Profile) bool { return p.Host != h.Name })
	slices.SortFunc(ps, func(a, b *profiles.Profile) int { return strings.Compare(a.Name, b.Name) })
	return ps
}
