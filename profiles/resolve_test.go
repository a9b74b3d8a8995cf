package profiles

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Short origin names for the table below. "managed credentials" has no
// constant here: it is an unknown origin, so tier 1.
const (
	EP  = OriginExecutorProfile
	AP  = OriginAgentProfile
	MR  = OriginManagedRuntime
	MC  = "managed credentials"
	MAD = OriginAgentDefaults
	LA  = OriginLaunch
)

func lit(key, origin, v string) Definition { return Definition{Key: key, Origin: origin, Literal: v} }
func sec(key, origin, name string) Definition {
	return Definition{Key: key, Origin: origin, Ref: Ref{Kind: RefSecret, Name: name}}
}

// store is a reveal function over fixed secrets that records every call.
type store struct {
	values map[string]string
	calls  []Ref
}

var errMissing = errors.New("no such secret")

func (s *store) reveal(r Ref) (string, error) {
	s.calls = append(s.calls, r)
	v, ok := s.values[string(r.Kind)+":"+r.Name]
	if !ok {
		return "", errMissing
	}
	return v, nil
}

func newStore() *store {
	return &store{values: map[string]string{
		"secret:s1": "plain-s1", "secret:s2": "plain-s2", "secret:deploy": "plain-deploy",
		"from_env:V": "plain-env", "from_file:/f": "plain-file",
	}}
}

func rec(key string, win []string, tier Tier, lose ...OriginTier) Override {
	return Override{Key: key, WinningOrigins: win, WinningTier: tier, LosingOrigins: lose}
}

type vector struct {
	name     string
	defs     []Definition
	want     map[string]string // nil when an error is expected
	records  []Override
	conflict *ConflictError
	secret   *SecretError // Err is not compared
	nilFunc  bool         // resolve with a nil RevealFunc
	reveals  []Ref        // exact reveal calls, when checked
}

// vectors are the resolver's cases: the rules of docs/profiles.md ("Which
// value wins") and the choices in DECISIONS.md.
var vectors = []vector{
	{name: "executor profile beats agent profile",
		defs:    []Definition{lit("ANTHROPIC_BASE_URL", EP, "http://gpu:3456"), lit("ANTHROPIC_BASE_URL", AP, "http://localhost:3456")},
		want:    map[string]string{"ANTHROPIC_BASE_URL": "http://gpu:3456"},
		records: []Override{rec("ANTHROPIC_BASE_URL", []string{EP}, 1, OriginTier{AP, 2})}},
	{name: "managed runtime beats agent profile",
		defs: []Definition{lit("K", MR, "a"), lit("K", AP, "b")}, want: map[string]string{"K": "a"},
		records: []Override{rec("K", []string{MR}, 1, OriginTier{AP, 2})}},
	{name: "an unknown origin (managed credentials) beats agent profile",
		defs: []Definition{lit("K", MC, "cred"), lit("K", AP, "lit")}, want: map[string]string{"K": "cred"},
		records: []Override{rec("K", []string{MC}, 1, OriginTier{AP, 2})}},
	{name: "agent profile beats managed agent defaults",
		defs: []Definition{lit("K", AP, "p"), lit("K", MAD, "d")}, want: map[string]string{"K": "p"},
		records: []Override{rec("K", []string{AP}, 2, OriginTier{MAD, 3})}},
	{name: "two tier-1 literals conflict",
		defs:     []Definition{lit("K", EP, "a"), lit("K", MR, "b")},
		conflict: &ConflictError{Key: "K", Origins: []string{EP, MR}}},
	{name: "merged identity counts as tier 1",
		defs:     []Definition{lit("AGENT_MODEL", EP, "x"), lit("AGENT_MODEL", AP, "x"), lit("AGENT_MODEL", MR, "y")},
		conflict: &ConflictError{Key: "AGENT_MODEL", Origins: []string{AP, EP, MR}}},
	{name: "merged identity spans tiers and wins",
		defs: []Definition{lit("K", EP, "x"), lit("K", AP, "x"), lit("K", MAD, "z")}, want: map[string]string{"K": "x"},
		records: []Override{rec("K", []string{AP, EP}, 1, OriginTier{MAD, 3})}},
	{name: "same origin differing values conflict",
		defs:     []Definition{lit("K", EP, "a"), lit("K", EP, "b")},
		conflict: &ConflictError{Key: "K", Origins: []string{EP}}},
	{name: "a single definition",
		defs: []Definition{lit("K", AP, "v")}, want: map[string]string{"K": "v"}},
	{name: "merged tier-1 pair beats tier 2",
		defs: []Definition{lit("K", MR, "s"), lit("K", MC, "s"), lit("K", AP, "p")}, want: map[string]string{"K": "s"},
		records: []Override{rec("K", []string{MC, MR}, 1, OriginTier{AP, 2})}},
	{name: "differing tier-1 pair plus tier 2 conflict",
		defs:     []Definition{lit("K", MR, "a"), lit("K", MC, "b"), lit("K", AP, "c")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, MC, MR}}},
	{name: "tier 1 beats tier 2 and tier 3",
		defs: []Definition{lit("K", MR, "a"), lit("K", AP, "b"), lit("K", MAD, "c")}, want: map[string]string{"K": "a"},
		records: []Override{rec("K", []string{MR}, 1, OriginTier{AP, 2}, OriginTier{MAD, 3})}},
	{name: "losing origins one per origin",
		defs: []Definition{lit("K", MR, "a"), lit("K", AP, "b"), lit("K", AP, "c")}, want: map[string]string{"K": "a"},
		records: []Override{rec("K", []string{MR}, 1, OriginTier{AP, 2})}},
	{name: "winning origins one per origin",
		defs: []Definition{lit("K", MR, "s"), lit("K", MR, "s"), lit("K", AP, "o")}, want: map[string]string{"K": "s"},
		records: []Override{rec("K", []string{MR}, 1, OriginTier{AP, 2})}},
	{name: "ambiguous top tier 2 conflicts",
		defs:     []Definition{lit("K", AP, "a"), lit("K", AP, "b"), lit("K", MAD, "c")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, MAD}}},
	{name: "secret executor profile vetoes literal agent profile",
		defs:     []Definition{sec("K", EP, "s1"), lit("K", AP, "l")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, EP}}},
	{name: "veto is symmetric",
		defs:     []Definition{lit("K", EP, "l"), sec("K", AP, "s1")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, EP}}},
	{name: "repository secret vs managed runtime",
		defs:     []Definition{sec("K", "repository app", "s1"), lit("K", MR, "x")},
		conflict: &ConflictError{Key: "K", Origins: []string{MR, "repository app"}}},
	{name: "every origin of a merged secret identity",
		defs:     []Definition{sec("K", "repository app", "s1"), sec("K", EP, "s1"), lit("K", AP, "l")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, EP, "repository app"}}},
	{name: "same secret from two repositories is revealed once",
		defs: []Definition{sec("NPM_TOKEN", "repository app", "s1"), sec("NPM_TOKEN", "repository tools", "s1")},
		want: map[string]string{"NPM_TOKEN": "plain-s1"}, reveals: []Ref{{RefSecret, "s1"}}},
	{name: "two repositories with different secrets conflict",
		defs:     []Definition{sec("NPM_TOKEN", "repository app", "s1"), sec("NPM_TOKEN", "repository tools", "s2")},
		conflict: &ConflictError{Key: "NPM_TOKEN", Origins: []string{"repository app", "repository tools"}}},
	{name: "two secrets from one origin conflict",
		defs:     []Definition{sec("K", EP, "s1"), sec("K", EP, "s2")},
		conflict: &ConflictError{Key: "K", Origins: []string{EP}}},
	{name: "one secret from two origins merges",
		defs: []Definition{sec("K", EP, "s1"), sec("K", AP, "s1")},
		want: map[string]string{"K": "plain-s1"}, reveals: []Ref{{RefSecret, "s1"}}},
	{name: "equal literals merge without a record",
		defs: []Definition{lit("K", EP, "v"), lit("K", AP, "v")}, want: map[string]string{"K": "v"}},
	{name: "a conflict drops an earlier override",
		defs:     []Definition{lit("A", EP, "a1"), lit("A", AP, "a2"), lit("B", MR, "b1"), lit("B", EP, "b2")},
		conflict: &ConflictError{Key: "B", Origins: []string{EP, MR}}},
	{name: "a failed reveal drops an earlier override",
		defs:   []Definition{lit("A", EP, "a1"), lit("A", AP, "a2"), sec("B", "repository app", "bad")},
		secret: &SecretError{Key: "B", Origin: "repository app"}},
	{name: "the first conflicting key is reported",
		defs:     []Definition{lit("ZKEY", EP, "a"), lit("ZKEY", MR, "b"), lit("AKEY", EP, "a"), lit("AKEY", MR, "b")},
		conflict: &ConflictError{Key: "AKEY", Origins: []string{EP, MR}}},
	{name: "empty input", defs: []Definition{}, want: map[string]string{}},
	{name: "nil input", defs: nil, want: map[string]string{}},
	{name: "blank keys are skipped",
		defs: []Definition{lit("", AP, "v"), lit("   ", AP, "v"), lit("\t", AP, "w"), lit("K", AP, "v")},
		want: map[string]string{"K": "v"}},
	{name: "nil reveal", defs: []Definition{sec("K", EP, "s1")}, nilFunc: true,
		secret: &SecretError{Key: "K", Origin: EP}},
	{name: "the first origin in order represents a merged secret",
		defs:   []Definition{sec("K", "repository web", "bad"), sec("K", "repository app", "bad")},
		secret: &SecretError{Key: "K", Origin: "repository app"}},
	{name: "repositoryapp is an unknown tier-1 peer",
		defs:     []Definition{lit("K", "repositoryapp", "a"), lit("K", EP, "b")},
		conflict: &ConflictError{Key: "K", Origins: []string{EP, "repositoryapp"}}},
	{name: "an empty origin beats tier 2",
		defs: []Definition{lit("K", "", "a"), lit("K", AP, "b")}, want: map[string]string{"K": "a"},
		records: []Override{rec("K", []string{""}, 1, OriginTier{AP, 2})}},
	{name: "repository literals (resolver level) merge and win",
		defs: []Definition{lit("K", "repository app", "x"), lit("K", "repository web", "x"), lit("K", AP, "y")},
		want: map[string]string{"K": "x"}, records: []Override{rec("K", []string{"repository app", "repository web"}, 1, OriginTier{AP, 2})}},

	// kandev-exec origins and reference kinds.
	{name: "launch is a tier-1 peer of the executor profile",
		defs:     []Definition{lit("NODE_ENV", LA, "dev"), lit("NODE_ENV", EP, "production")},
		conflict: &ConflictError{Key: "NODE_ENV", Origins: []string{EP, LA}}},
	{name: "launch beats agent profile",
		defs: []Definition{lit("K", LA, "l"), lit("K", AP, "a")}, want: map[string]string{"K": "l"},
		records: []Override{rec("K", []string{LA}, 1, OriginTier{AP, 2})}},
	{name: "from_env vetoes like a secret",
		defs:     []Definition{{Key: "K", Origin: EP, Ref: Ref{RefFromEnv, "V"}}, lit("K", AP, "x")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, EP}}},
	{name: "from_file vetoes a managed agent default",
		defs:     []Definition{{Key: "K", Origin: AP, Ref: Ref{RefFromFile, "/f"}}, lit("K", MAD, "x")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, MAD}}},
	{name: "identity includes the reference kind",
		defs:     []Definition{{Key: "K", Origin: EP, Ref: Ref{RefFromEnv, "s1"}}, sec("K", AP, "s1")},
		conflict: &ConflictError{Key: "K", Origins: []string{AP, EP}}},
	{name: "equal from_env references merge",
		defs: []Definition{{Key: "K", Origin: EP, Ref: Ref{RefFromEnv, "V"}}, {Key: "K", Origin: AP, Ref: Ref{RefFromEnv, "V"}}},
		want: map[string]string{"K": "plain-env"}, reveals: []Ref{{RefFromEnv, "V"}}},
	{name: "a reference with a literal is reference-backed",
		defs: []Definition{{Key: "K", Origin: EP, Literal: "ignored", Ref: Ref{RefSecret, "s1"}}},
		want: map[string]string{"K": "plain-s1"}},
	{name: "a whitespace literal is a value and wins by tier",
		defs: []Definition{lit("K", EP, " "), lit("K", AP, "a")}, want: map[string]string{"K": " "},
		records: []Override{rec("K", []string{EP}, 1, OriginTier{AP, 2})}},
	{name: "only the winner of each key is revealed, in key order",
		defs:    []Definition{sec("B", EP, "s2"), sec("A", EP, "s1"), lit("C", MR, "c")},
		want:    map[string]string{"A": "plain-s1", "B": "plain-s2", "C": "c"},
		reveals: []Ref{{RefSecret, "s1"}, {RefSecret, "s2"}}},
	{name: "records are ordered by key",
		defs:    []Definition{lit("Z", EP, "1"), lit("Z", AP, "2"), lit("A", MR, "1"), lit("A", MAD, "2")},
		want:    map[string]string{"A": "1", "Z": "1"},
		records: []Override{rec("A", []string{MR}, 1, OriginTier{MAD, 3}), rec("Z", []string{EP}, 1, OriginTier{AP, 2})}},
	{name: "one origin both wins and loses",
		defs: []Definition{lit("K", MR, "a"), lit("K", AP, "a"), lit("K", AP, "b")}, want: map[string]string{"K": "a"},
		records: []Override{rec("K", []string{AP, MR}, 1, OriginTier{AP, 2})}},
	{name: "keys are case-sensitive",
		defs: []Definition{lit("path", EP, "a"), lit("PATH", MR, "b")}, want: map[string]string{"path": "a", "PATH": "b"}},
}

func runVector(t *testing.T, v vector, defs []Definition) {
	t.Helper()
	s := newStore()
	reveal := RevealFunc(s.reveal)
	if v.nilFunc {
		reveal = nil
	}
	env, records, err := Resolve(defs, reveal)
	if v.want != nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if env == nil || !reflect.DeepEqual(env, v.want) {
			t.Fatalf("env = %v, want %v", env, v.want)
		}
		if !reflect.DeepEqual(records, v.records) {
			t.Fatalf("records = %+v, want %+v", records, v.records)
		}
		if v.reveals != nil && !reflect.DeepEqual(s.calls, v.reveals) {
			t.Fatalf("reveal calls = %v, want %v", s.calls, v.reveals)
		}
		if err := ValidateDefinitions(defs); err != nil {
			t.Fatalf("ValidateDefinitions rejects what Resolve accepts: %v", err)
		}
		return
	}
	if env != nil || records != nil {
		t.Fatalf("error must return nil map and records, got %v %v", env, records)
	}
	switch {
	case v.conflict != nil:
		var ce *ConflictError
		if !errors.As(err, &ce) || !reflect.DeepEqual(ce, v.conflict) {
			t.Fatalf("err = %#v, want %#v", err, v.conflict)
		}
		if len(s.calls) != 0 {
			t.Fatalf("revealed %d references despite a conflict", len(s.calls))
		}
		if !reflect.DeepEqual(ValidateDefinitions(defs), err) {
			t.Fatalf("ValidateDefinitions verdict differs from Resolve")
		}
	case v.secret != nil:
		var se *SecretError
		if !errors.As(err, &se) || se.Key != v.secret.Key || se.Origin != v.secret.Origin {
			t.Fatalf("err = %#v, want %#v", err, v.secret)
		}
		if ValidateDefinitions(defs) != nil {
			t.Fatalf("ValidateDefinitions must not reveal, so cannot fail here")
		}
	default:
		t.Fatalf("vector %q expects nothing", v.name)
	}
}

func TestResolveVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			runVector(t, v, v.defs)
			rev := slices.Clone(v.defs)
			slices.Reverse(rev)
			runVector(t, v, rev) // input order never matters
		})
	}
}

func TestResolveSecretErrorMessages(t *testing.T) {
	_, _, err := Resolve([]Definition{lit("A", EP, "a1"), lit("A", AP, "a2"), sec("B", "repository app", "bad")}, newStore().reveal)
	if got, want := err.Error(), `environment key "B" from repository app could not be resolved`; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
	if !errors.Is(err, errMissing) {
		t.Fatal("the cause must stay reachable through Unwrap")
	}
	_, _, err = Resolve([]Definition{sec("K", EP, "s1")}, nil)
	if !errors.Is(err, ErrNoReveal) {
		t.Fatalf("nil reveal: %v", err)
	}
	_, _, err = Resolve([]Definition{sec("K", EP, "s1")}, func(Ref) (string, error) { return "a\x00b", nil })
	if !errors.Is(err, ErrNULValue) {
		t.Fatalf("NUL in a revealed value: %v", err)
	}
	// "" with a nil error is a value, not a failure.
	env, _, err := Resolve([]Definition{sec("K", EP, "s1")}, func(Ref) (string, error) { return "", nil })
	if err != nil || env["K"] != "" || len(env) != 1 {
		t.Fatalf("empty revealed value: %v %v", env, err)
	}
}

func TestConflictErrorMessage(t *testing.T) {
	_, _, err := Resolve([]Definition{lit("K", EP, "a"), lit("K", MR, "b")}, nil)
	want := `environment key "K" has conflicting definitions from executor profile, managed runtime`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// An override record has no field that could hold a value.
func TestOverrideRecordHasNoValueField(t *testing.T) {
	var got []string
	for _, typ := range []reflect.Type{reflect.TypeFor[Override](), reflect.TypeFor[OriginTier]()} {
		for f := range typ.Fields() {
			got = append(got, typ.Name()+"."+f.Name+":"+f.Type.String())
		}
	}
	want := []string{"Override.Key:string", "Override.WinningOrigins:[]string", "Override.WinningTier:profiles.Tier",
		"Override.LosingOrigins:[]profiles.OriginTier", "OriginTier.Origin:string", "OriginTier.Tier:profiles.Tier"}
	if !slices.Equal(got, want) {
		t.Fatalf("fields = %v, want %v", got, want)
	}
}

// The same set twice gives deeply identical results.
func TestResolveDeterministic(t *testing.T) {
	defs := []Definition{lit("A", MR, "1"), lit("A", AP, "2"), lit("A", MAD, "3"), sec("B", EP, "s1"), sec("B", "repository x", "s1")}
	e1, r1, err1 := Resolve(defs, newStore().reveal)
	e2, r2, err2 := Resolve(defs, newStore().reveal)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(e1, e2) || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("results differ: %v %v / %v %v", e1, r1, e2, r2)
	}
}

// Resolve must not reorder or otherwise touch its input.
func TestResolveLeavesInputAlone(t *testing.T) {
	defs := []Definition{lit("B", EP, "b"), lit("A", AP, "a"), lit("A", MR, "x")}
	before := slices.Clone(defs)
	if _, _, err := Resolve(defs, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(defs, before) {
		t.Fatalf("input changed: %v", defs)
	}
}

// The preflight accepts a set that the full set later rejects.
func TestPreflightAcceptsWhatLaterConflicts(t *testing.T) {
	preflight := []Definition{lit("SHARED", EP, "x"), lit(EnvTaskID, MR, "t1")}
	if err := ValidateDefinitions(preflight); err != nil {
		t.Fatal(err)
	}
	for _, extra := range []Definition{sec("SHARED", AP, "s1"), lit("SHARED", MR, "y")} {
		var ce *ConflictError
		if err := ValidateDefinitions(append(slices.Clone(preflight), extra)); !errors.As(err, &ce) || ce.Key != "SHARED" {
			t.Fatalf("with %v: err = %v, want a conflict on SHARED", extra, err)
		}
	}
}

func TestTierForOrigin(t *testing.T) {
	for origin, want := range map[string]Tier{
		MR: 1, EP: 1, LA: 1, AP: 2, MAD: 3, "repository app": 1, "repository": 1,
		// Unknown origins fail closed to tier 1.
		"": 1, "repositoryapp": 1, "Executor Profile": 1, "managed/runtime": 1, " agent profile": 1, MC: 1,
	} {
		if got := TierForOrigin(origin); got != want {
			t.Errorf("TierForOrigin(%q) = %d, want %d", origin, got, want)
		}
	}
}

func TestIsRepositoryOrigin(t *testing.T) {
	cases := map[string]bool{
		"repository": true, "repository app": true, "repository  app": true, "repository\tapp": true,
		" repository app": true, "repository\u00a0app": true,
		"repositoryapp": false, "": false, "Repository app": false, "repositor": false, "app repository": false,
		"repository\xffapp": false,
	}
	for origin, want := range cases {
		if got := IsRepositoryOrigin(origin); got != want {
			t.Errorf("IsRepositoryOrigin(%q) = %v, want %v", origin, got, want)
		}
		// The rule: the first field is "repository".
		f := strings.Fields(origin)
		if rule := len(f) > 0 && f[0] == "repository"; rule != want {
			t.Errorf("case %q disagrees with the strings.Fields rule", origin)
		}
	}
}

func TestRepositoryOrigin(t *testing.T) {
	if got := RepositoryOrigin("app"); got != "repository app" || !IsRepositoryOrigin(got) {
		t.Fatalf("RepositoryOrigin(app) = %q", got)
	}
	if got := RepositoryOrigin(""); got != "repository" {
		t.Fatalf("RepositoryOrigin(\"\") = %q", got)
	}
}
