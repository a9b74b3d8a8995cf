package profiles

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/redact"
)

// Markers that must never surface: reference names and revealed plaintext.
const (
	refMarker   = "REFNAME"
	plainMarker = "PLAINTEXT"
)

var (
	genKeys    = []string{"A", "B", "C", "", "  "}
	genOrigins = []string{EP, AP, MR, MAD, LA, MC, "repository app", "repository web", "", "repositoryapp"}
	genKinds   = []RefKind{"", RefSecret, RefFromEnv, RefFromFile}
	genValues  = []string{"v1", "v2", "v3"}
)

// genDefinition decodes four bytes into a definition from small alphabets,
// so that keys, origins and identities collide often.
func genDefinition(b [4]byte) Definition {
	d := Definition{
		Key:    genKeys[int(b[0])%len(genKeys)],
		Origin: genOrigins[int(b[1])%len(genOrigins)],
	}
	v := genValues[int(b[3])%len(genValues)]
	if kind := genKinds[int(b[2])%len(genKinds)]; kind != "" {
		d.Ref = Ref{Kind: kind, Name: refMarker + "-" + v}
	} else {
		d.Literal = v
	}
	return d
}

func genDefinitions(r *rand.Rand, n int) []Definition {
	defs := make([]Definition, n)
	for i := range defs {
		defs[i] = genDefinition([4]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	return defs
}

// genReveal fails for one name so that reveal errors are exercised too.
func genReveal(r Ref) (string, error) {
	if strings.HasSuffix(r.Name, "-v3") {
		return "", fmt.Errorf("backend says %s is gone", r.Name)
	}
	return plainMarker + "(" + string(r.Kind) + ":" + r.Name + ")", nil
}

type outcome struct {
	env     map[string]string
	records []Override
	err     string
}

func resolveOutcome(defs []Definition) outcome {
	env, records, err := Resolve(defs, genReveal)
	o := outcome{env: env, records: records}
	if err != nil {
		o.err = fmt.Sprintf("%T %v", err, err)
	}
	return o
}

// checkInvariants holds for any input: all or nothing, no leak, agreement
// with the oracle, with Explain and with ValidateDefinitions, and
// independence from input order.
func checkInvariants(t *testing.T, defs []Definition, shuffle func([]Definition)) {
	t.Helper()
	got := resolveOutcome(defs)
	if got.err != "" && (got.env != nil || got.records != nil) {
		t.Fatalf("error %s with a partial result", got.err)
	}
	if got.err == "" && got.env == nil {
		t.Fatal("success with a nil map")
	}
	if got.records != nil && len(got.records) == 0 {
		t.Fatal("empty non-nil records")
	}
	want := oracle(defs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve and the oracle disagree on %v:\n got  %+v\n want %+v", defs, got, want)
	}
	for range 3 {
		p := slices.Clone(defs)
		shuffle(p)
		if again := resolveOutcome(p); !reflect.DeepEqual(again, got) {
			t.Fatalf("input order changed the result:\n %+v\n %+v", got, again)
		}
	}
	explained, xerr := Explain(defs)
	verr := ValidateDefinitions(defs)
	if (xerr == nil) != (verr == nil) || (xerr != nil && xerr.Error() != verr.Error()) {
		t.Fatalf("Explain and ValidateDefinitions disagree: %v / %v", xerr, verr)
	}
	if verr != nil && got.err != fmt.Sprintf("%T %v", verr, verr) {
		t.Fatalf("ValidateDefinitions %v, Resolve %s", verr, got.err)
	}
	for _, e := range explained {
		if e.Secret != (e.Value == redact.Mask) || e.Overridden == nil {
			t.Fatalf("bad explain row %+v", e)
		}
		if got.env != nil && !e.Secret && got.env[e.Key] != e.Value {
			t.Fatalf("explain value %q, resolved %q", e.Value, got.env[e.Key])
		}
	}
	var shown strings.Builder
	x, _ := json.Marshal(explained)
	r, _ := json.Marshal(got.records)
	fmt.Fprintf(&shown, "%s %s %s %v %+v %#v %v %+v %#v", got.err, x, r, got.records, got.records, got.records, defs, defs, defs)
	if s := shown.String(); strings.Contains(s, refMarker) || strings.Contains(s, plainMarker) {
		t.Fatalf("a reference name or a plaintext leaked: %s", s)
	}
}

func TestResolveProperties(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42, 2026} {
		r := rand.New(rand.NewPCG(seed, seed))
		shuffle := func(d []Definition) { r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] }) }
		for range 2000 {
			checkInvariants(t, genDefinitions(r, r.IntN(12)), shuffle)
		}
	}
}

// oracle is a deliberately naive reading of the selection rules in
// docs/profiles.md: maps, sha256 identities and repeated scans, no shared
// code with Resolve. It is the differential check of Resolve's selection.
func oracle(defs []Definition) outcome {
	identity := func(d Definition) string {
		if d.Ref.Kind != "" {
			return "ref:" + string(d.Ref.Kind) + ":" + d.Ref.Name
		}
		sum := sha256.Sum256([]byte(d.Literal))
		return "literal:" + hex.EncodeToString(sum[:])
	}
	less := func(a, b Definition) bool {
		return slices.Compare([]string{a.Key, a.Origin, string(a.Ref.Kind), a.Ref.Name, a.Literal},
			[]string{b.Key, b.Origin, string(b.Ref.Kind), b.Ref.Name, b.Literal}) < 0
	}
	byKey := map[string][]Definition{}
	for _, d := range defs {
		if strings.TrimSpace(d.Key) != "" {
			byKey[d.Key] = append(byKey[d.Key], d)
		}
	}
	type group struct {
		rep     Definition
		origins map[string]bool
		tier    Tier
	}
	sortedSet := func(m map[string]bool) []string {
		var s []string
		for o := range m {
			s = append(s, o)
		}
		slices.Sort(s)
		return s
	}
	winners := map[string]Definition{}
	var records []Override
	var conflicts []string
	conflictOrigins := map[string][]string{}
	for key, ds := range byKey {
		groups := map[string]*group{}
		for _, d := range ds {
			id := identity(d)
			g := groups[id]
			if g == nil {
				g = &group{rep: d, origins: map[string]bool{}, tier: 99}
				groups[id] = g
			}
			if less(d, g.rep) {
				g.rep = d
			}
			g.origins[d.Origin] = true
			g.tier = min(g.tier, TierForOrigin(d.Origin))
		}
		all := map[string]bool{}
		anyRef, top := false, Tier(99)
		for _, g := range groups {
			for o := range g.origins {
				all[o] = true
			}
			anyRef = anyRef || g.rep.Ref.Kind != ""
			top = min(top, g.tier)
		}
		var atTop []*group
		for _, g := range groups {
			if g.tier == top {
				atTop = append(atTop, g)
			}
		}
		if len(groups) > 1 && (anyRef || len(atTop) > 1) {
			conflicts = append(conflicts, key)
			conflictOrigins[key] = sortedSet(all)
			continue
		}
		win := atTop[0]
		winners[key] = win.rep
		if len(groups) == 1 {
			continue
		}
		losing := map[string]bool{}
		for _, g := range groups {
			if g != win {
				for o := range g.origins {
					losing[o] = true
				}
			}
		}
		var lose []OriginTier
		for _, o := range sortedSet(losing) {
			lose = append(lose, OriginTier{o, TierForOrigin(o)})
		}
		records = append(records, Override{Key: key, WinningOrigins: sortedSet(win.origins), WinningTier: win.tier, LosingOrigins: lose})
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		err := &ConflictError{Key: conflicts[0], Origins: conflictOrigins[conflicts[0]]}
		return outcome{err: fmt.Sprintf("%T %v", err, err)}
	}
	keys := make([]string, 0, len(winners))
	for k := range winners {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := map[string]string{}
	for _, k := range keys {
		d := winners[k]
		if d.Ref.Kind == "" {
			env[k] = d.Literal
			continue
		}
		v, err := genReveal(d.Ref)
		if err != nil {
			err := &SecretError{Key: k, Origin: d.Origin, Err: err}
			return outcome{err: fmt.Sprintf("%T %v", err, err)}
		}
		env[k] = v
	}
	slices.SortFunc(records, func(a, b Override) int { return strings.Compare(a.Key, b.Key) })
	return outcome{env: env, records: records}
}

// Reveal happens after selection, once per referenced winner, never for a
// loser and never when any key conflicts.
func TestRevealOnlyWinnersAfterSelection(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		defs := genDefinitions(r, r.IntN(10))
		var calls []Ref
		env, _, err := Resolve(defs, func(ref Ref) (string, error) { calls = append(calls, ref); return "x", nil })
		explained, xerr := Explain(defs)
		if err != nil {
			if xerr == nil || xerr.Error() != err.Error() || len(calls) != 0 {
				t.Fatalf("conflict %v, but %d reveals", err, len(calls))
			}
			continue
		}
		var want []Ref
		for _, e := range explained {
			if e.Secret {
				// Explain hides the reference, so find it among the winners' definitions.
				for _, d := range defs {
					if d.Key == e.Key && d.Ref.IsSet() && slices.Contains(e.Origins, d.Origin) {
						want = append(want, d.Ref)
						break
					}
				}
			}
		}
		if !slices.Equal(calls, want) || len(env) != len(explained) {
			t.Fatalf("reveals %v, want %v", calls, want)
		}
	}
}
