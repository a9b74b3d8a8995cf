package profiles

import (
	"cmp"
	"slices"
	"strings"
)

// Definition is one value for one key, with where it came from. It keeps its
// source identity (the literal, or the reference) until Resolve.
type Definition struct {
	Key     string
	Origin  string
	Literal string
	// Ref set makes the definition reference-backed: its identity and its
	// value come from the reference and Literal is ignored.
	Ref Ref
}

// String names the definition without its value or reference name.
func (d Definition) String() string {
	kind := "literal"
	if d.Ref.IsSet() {
		kind = string(d.Ref.Kind)
	}
	return d.Key + " from " + d.Origin + " (" + kind + ")"
}

// OriginTier is one origin with its own tier.
type OriginTier struct {
	Origin string `json:"origin"`
	Tier   Tier   `json:"tier"`
}

// Override records a key resolved by precedence. It has no field that could
// hold a value or a reference.
type Override struct {
	Key            string       `json:"key"`
	WinningOrigins []string     `json:"winning_origins"` // distinct, sorted
	WinningTier    Tier         `json:"winning_tier"`
	LosingOrigins  []OriginTier `json:"losing_origins"` // one per origin, sorted
}

// RevealFunc fetches the value of a winning reference. It is the only I/O of
// a resolve. An error means the reference cannot be used; a nil error with
// "" is a real empty value.
type RevealFunc func(Ref) (string, error)

// Resolve turns definitions into the environment of one launch.
//
// Identical identities merge; differing identities for one key conflict if
// any of them is a reference (the veto) or if the strongest occupied tier
// holds more than one; otherwise the strongest literal wins and one Override
// records the losers. References are revealed only for winners and only
// after every key is conflict-free. All or nothing: on error the map and the
// overrides are nil. On success the map is non-nil and the overrides are nil
// when nothing was overridden. Input order never matters.
func Resolve(defs []Definition, reveal RevealFunc) (map[string]string, []Override, error) {
	choices, err := selectDefinitions(defs)
	if err != nil {
		return nil, nil, err
	}
	env := make(map[string]string, len(choices))
	var overrides []Override
	for _, c := range choices {
		v, err := c.value(reveal)
		if err != nil {
			return nil, nil, err
		}
		env[c.def.Key] = v
		if c.losers != nil {
			overrides = append(overrides, Override{
				Key: c.def.Key, WinningOrigins: c.origins, WinningTier: c.tier, LosingOrigins: c.losers,
			})
		}
	}
	return env, overrides, nil
}

// ValidateDefinitions applies Resolve's selection (tiers and veto) without
// revealing anything: a preflight that never rejects what Resolve accepts.
func ValidateDefinitions(defs []Definition) error {
	_, err := selectDefinitions(defs)
	return err
}

// choice is the selected definition of one key.
type choice struct {
	def     Definition   // representative: first of its identity in sort order
	origins []string     // every origin of the winning identity, sorted
	tier    Tier         // strongest tier among origins
	losers  []OriginTier // nil unless precedence discarded something
}

func (c choice) value(reveal RevealFunc) (string, error) {
	if !c.def.Ref.IsSet() {
		return c.def.Literal, nil
	}
	if reveal == nil {
		return "", &SecretError{Key: c.def.Key, Origin: c.def.Origin, Err: ErrNoReveal}
	}
	v, err := reveal(c.def.Ref)
	if err == nil && strings.IndexByte(v, 0) >= 0 {
		err = ErrNULValue
	}
	if err != nil {
		return "", &SecretError{Key: c.def.Key, Origin: c.def.Origin, Err: err}
	}
	return v, nil
}

// identityGroup is one distinct identity within a key.
type identityGroup struct {
	rep  int  // index of the representative in the sorted slice
	tier Tier // strongest tier of its origins
}

// selectDefinitions runs the selection of docs/profiles.md ("Which value
// wins") and returns one choice per key in byte order of keys, or the
// conflict of the smallest key. It sorts once (n log n) and then works per
// key on contiguous runs.
func selectDefinitions(defs []Definition) ([]choice, error) {
	ds := make([]Definition, 0, len(defs))
	for _, d := range defs {
		if strings.TrimSpace(d.Key) != "" { // blank keys are skipped
			ds = append(ds, d)
		}
	}
	// One total order (DECISIONS.md, "Origins and references"): key, origin,
	// the reference as kind then name, literal.
	slices.SortFunc(ds, func(a, b Definition) int {
		return cmp.Or(
			strings.Compare(a.Key, b.Key),
			strings.Compare(a.Origin, b.Origin),
			strings.Compare(string(a.Ref.Kind), string(b.Ref.Kind)),
			strings.Compare(a.Ref.Name, b.Ref.Name),
			strings.Compare(a.Literal, b.Literal),
		)
	})
	tiers := make([]Tier, len(ds))
	for i := range ds {
		tiers[i] = TierForOrigin(ds[i].Origin)
	}
	// Every key's origins fit in its own run's slots of one buffer, which
	// saves an allocation per key; capped sub-slices keep them apart.
	buf := make([]string, len(ds))
	choices := make([]choice, 0, len(ds))
	var idx []int
	var groups []identityGroup
	for lo := 0; lo < len(ds); {
		hi := lo + 1
		for hi < len(ds) && ds[hi].Key == ds[lo].Key {
			hi++
		}
		if hi-lo == 1 { // the common case: one definition, nothing to decide
			buf[lo] = ds[lo].Origin
			choices = append(choices, choice{def: ds[lo], origins: buf[lo:hi:hi], tier: tiers[lo]})
			lo = hi
			continue
		}
		idx, groups = groupIdentities(ds, tiers, lo, hi, idx[:0], groups[:0])
		c, err := decide(ds, tiers, lo, hi, groups, buf[lo:lo:hi])
		if err != nil {
			return nil, err
		}
		choices = append(choices, c)
		lo = hi
	}
	return choices, nil
}

// groupIdentities merges ds[lo:hi] (one key) by identity. Sorting positions
// by (identity, position) makes each run's first position its
// representative, the first definition of that identity in the total order.
func groupIdentities(ds []Definition, tiers []Tier, lo, hi int, idx []int, groups []identityGroup) ([]int, []identityGroup) {
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(compareIdentity(&ds[a], &ds[b]), cmp.Compare(a, b))
	})
	for n, i := range idx {
		if n > 0 && compareIdentity(&ds[i], &ds[groups[len(groups)-1].rep]) == 0 {
			g := &groups[len(groups)-1]
			g.tier = min(g.tier, tiers[i])
			continue
		}
		groups = append(groups, identityGroup{rep: i, tier: tiers[i]})
	}
	return idx, groups
}

// decide applies steps 4-6 of the procedure to one key's identity groups.
// buf has room for hi-lo origins.
func decide(ds []Definition, tiers []Tier, lo, hi int, groups []identityGroup, buf []string) (choice, error) {
	if len(groups) == 1 {
		rep := groups[0].rep
		return choice{def: ds[rep], origins: originsOf(ds, lo, hi, rep, true, buf), tier: groups[0].tier}, nil
	}
	// Every reference kind vetoes, not only secrets: from_env and from_file
	// are read at launch too, so equal plaintext can never be shown here and
	// a tier must never silently drop one (DECISIONS.md, "Origins and
	// references").
	top, atTop, vetoed := groups[0].tier, 0, false
	for _, g := range groups {
		vetoed = vetoed || ds[g.rep].Ref.IsSet()
		switch {
		case g.tier < top:
			top, atTop = g.tier, 1
		case g.tier == top:
			atTop++
		}
	}
	if vetoed || atTop > 1 {
		return choice{}, &ConflictError{Key: ds[lo].Key, Origins: originsOf(ds, lo, hi, -1, false, nil)}
	}
	var rep int
	for _, g := range groups {
		if g.tier == top {
			rep = g.rep
		}
	}
	var losers []OriginTier
	for i := lo; i < hi; i++ {
		if compareIdentity(&ds[i], &ds[rep]) != 0 &&
			(len(losers) == 0 || losers[len(losers)-1].Origin != ds[i].Origin) {
			losers = append(losers, OriginTier{Origin: ds[i].Origin, Tier: tiers[i]})
		}
	}
	return choice{def: ds[rep], origins: originsOf(ds, lo, hi, rep, true, buf), tier: top, losers: losers}, nil
}

// originsOf lists the distinct origins of ds[lo:hi], all of them or only
// those sharing rep's identity, appended to out. The run is sorted by
// origin, so skipping repeats keeps the result sorted and distinct.
func originsOf(ds []Definition, lo, hi, rep int, sameAsRep bool, out []string) []string {
	for i := lo; i < hi; i++ {
		if sameAsRep && compareIdentity(&ds[i], &ds[rep]) != 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != ds[i].Origin {
			out = append(out, ds[i].Origin)
		}
	}
	return out
}

// compareIdentity orders identities: references by kind and name, then
// literals by their bytes: the same relation as comparing sha256 hashes
// of the literals, without hashing every value.
func compareIdentity(a, b *Definition) int {
	ar, br := a.Ref.IsSet(), b.Ref.IsSet()
	switch {
	case ar && br:
		return cmp.Or(strings.Compare(string(a.Ref.Kind), string(b.Ref.Kind)), strings.Compare(a.Ref.Name, b.Ref.Name))
	case ar:
		return -1
	case br:
		return 1
	}
	return strings.Compare(a.Literal, b.Literal)
}
