package profiles

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tier orders origins: a lower number is stronger. Origins in one tier are
// peers and never override each other.
type Tier int

const (
	// managed runtime, executor profile, repositories, and launch: --env is a
	// peer, so it conflicts with a differing profile value rather than
	// overriding it (docs/profiles.md; DECISIONS.md, "Out of scope").
	TierAuthoritative  Tier = 1
	TierProfileDefault Tier = 2 // agent profile
	TierAgentDefault   Tier = 3 // managed agent defaults
)

// Origins of docs/profiles.md, "Which value wins". Build repository
// origins with RepositoryOrigin.
const (
	OriginManagedRuntime  = "managed runtime"
	OriginExecutorProfile = "executor profile"
	OriginLaunch          = "launch"
	OriginAgentProfile    = "agent profile"
	OriginAgentDefaults   = "managed agent defaults"

	originRepository = "repository"
)

// originTiers is read only through TierForOrigin; repository origins are
// matched by IsRepositoryOrigin instead.
var originTiers = map[string]Tier{
	OriginManagedRuntime:  TierAuthoritative,
	OriginExecutorProfile: TierAuthoritative,
	OriginLaunch:          TierAuthoritative,
	OriginAgentProfile:    TierProfileDefault,
	OriginAgentDefaults:   TierAgentDefault,
}

// TierForOrigin classifies an origin. Matching is exact (no case folding or
// trimming), and an origin it does not know is Tier 1: failing closed makes
// a typo a peer that conflicts, never a default that quietly loses.
func TierForOrigin(origin string) Tier {
	if IsRepositoryOrigin(origin) {
		return TierAuthoritative
	}
	if t, ok := originTiers[origin]; ok {
		return t
	}
	return TierAuthoritative
}

// IsRepositoryOrigin is the one rule for repository origins: the first
// whitespace-separated field is exactly "repository". So "repository app"
// is one and "repositoryapp" is not. Same answer as strings.Fields(origin)[0]
// == "repository", without allocating.
func IsRepositoryOrigin(origin string) bool {
	rest, ok := strings.CutPrefix(strings.TrimLeftFunc(origin, unicode.IsSpace), originRepository)
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || unicode.IsSpace(r)
}

// RepositoryOrigin is the origin of a repository's secret bindings. Names are
// validated path segments, so there is nothing to trim; a blank name gives
// the bare "repository".
func RepositoryOrigin(name string) string {
	if name == "" {
		return originRepository
	}
	return originRepository + " " + name
}
