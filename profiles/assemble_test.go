package profiles

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustProfile(t *testing.T, yaml string) *Profile {
	t.Helper()
	p, err := DecodeProfile("p.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAssemble(t *testing.T) {
	p := mustProfile(t, "name: p\nhost: h\nenv: {B: b, A: {secret: s1}}\nrepositories:\n  - {name: app, url: u, secrets: {T: {secret: deploy}}}\n")
	agent := &AgentPreset{Name: "a", Command: []string{"x"}, Env: []EnvEntry{{Key: "LANG", Literal: "en_US.UTF-8"}}}
	launch := []EnvEntry{{Key: "L", Literal: "l"}}
	got := Assemble(map[string]string{EnvTaskDir: "/d", EnvTaskID: "t1"}, p, agent, launch)
	want := []Definition{
		lit(EnvTaskDir, MR, "/d"), lit(EnvTaskID, MR, "t1"),
		lit("B", EP, "b"), sec("A", EP, "s1"),
		sec("T", "repository app", "deploy"),
		lit("L", LA, "l"),
		lit("LANG", AP, "en_US.UTF-8"),
		lit("TERM", MAD, "xterm-256color"), // LANG is claimed, so only TERM is defaulted
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	// Definitions are values; a later edit of the profile is not seen.
	p.Env[0].Literal = "edited"
	if got[2].Literal != "b" {
		t.Fatal("assembled definitions alias the profile")
	}
}

// A default dropped at assembly produces no record, and a reference meant
// to replace a default is not vetoed by it.
func TestAssembleDefaultsFillGapsOnly(t *testing.T) {
	agent := &AgentPreset{Name: "a", Command: []string{"x"}, Env: []EnvEntry{{Key: "TERM", Literal: "dumb"}}}
	env, records, err := Resolve(Assemble(nil, nil, agent, nil), nil)
	if err != nil || records != nil || env["TERM"] != "dumb" || env["LANG"] != "C.UTF-8" {
		t.Fatalf("got %v %v %v", env, records, err)
	}
	p := mustProfile(t, "name: p\nhost: h\nenv: {LANG: {from_env: LANG}}\n")
	env, _, err = Resolve(Assemble(nil, p, nil, nil), func(Ref) (string, error) { return "fr_FR.UTF-8", nil })
	if err != nil || env["LANG"] != "fr_FR.UTF-8" {
		t.Fatalf("got %v %v", env, err)
	}
}

// Entries are assembled as the file writes them: an empty literal is a
// value, a secret is kept, and a duplicate or reserved key never gets
// through (DECISIONS.md, "Empty and whitespace values").
func TestAssembleTakesEntriesAsWritten(t *testing.T) {
	agent := &AgentPreset{Name: "a", Command: []string{"x"}, Env: []EnvEntry{{Key: "K", Literal: "agent"}}}

	// An explicit "" is a literal, so it wins by tier.
	p := mustProfile(t, "name: p\nhost: h\nenv: {K: \"\"}\n")
	env, records, err := Resolve(Assemble(nil, p, agent, nil), nil)
	if err != nil || env["K"] != "" || !reflect.DeepEqual(records, []Override{rec("K", []string{EP}, 1, OriginTier{AP, 2})}) {
		t.Fatalf("explicit empty value: %v %v %v", env, records, err)
	}
	// Alone, it sets K to "".
	env, _, err = Resolve(Assemble(nil, p, nil, nil), nil)
	if v, ok := env["K"]; err != nil || !ok || v != "" {
		t.Fatalf("explicit empty value alone: %v %v", env, err)
	}
	// A key left out of the profile lets the agent win.
	env, records, err = Resolve(Assemble(nil, mustProfile(t, "name: p\nhost: h\n"), agent, nil), nil)
	if err != nil || env["K"] != "agent" || records != nil {
		t.Fatalf("key left out: %v %v %v", env, records, err)
	}
	// A secret-backed entry is kept.
	p = mustProfile(t, "name: p\nhost: h\nenv: {TOKEN: {secret: s1}}\n")
	if defs := Assemble(nil, p, nil, nil); len(defs) != 3 || defs[0] != sec("TOKEN", EP, "s1") {
		t.Fatalf("secret-backed entry: %v", defs)
	}
	// One profile cannot give a key twice; the decoder refuses it.
	if _, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\nenv:\n  TOKEN: a\n  TOKEN: b\n")); err == nil {
		t.Fatal("duplicate key accepted")
	}
	// A reserved key is refused at decode time, and if it got
	// through anyway it would conflict with the runtime, never replace it.
	if _, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\nenv: {KANDEV_FOO: x}\n")); err == nil {
		t.Fatal("reserved key accepted")
	}
	bypass := &Profile{Env: []EnvEntry{{Key: "KANDEV_FOO", Literal: "profile-value"}}}
	var ce *ConflictError
	_, _, err = Resolve(Assemble(map[string]string{"KANDEV_FOO": "managed-value"}, bypass, nil, nil), nil)
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Origins, []string{EP, MR}) {
		t.Fatalf("reserved key past the decoder: %v", err)
	}
}

func TestExplain(t *testing.T) {
	p := mustProfile(t, `name: p
host: h
env:
  NODE_ENV: production
  API_TOKEN: {secret: REFNAME-api}
  EDITOR: vim
repositories:
  - {name: app, url: u, secrets: {DEPLOY: {secret: REFNAME-deploy}}}
`)
	agent := &AgentPreset{Name: "a", Command: []string{"x"}, Env: []EnvEntry{{Key: "EDITOR", Literal: "nano"}, {Key: "GH", Ref: Ref{RefFromEnv, "GH_TOKEN"}}}}
	rows, err := Explain(Assemble(RuntimePlaceholders(), p, agent, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := `[` +
		`{"key":"API_TOKEN","origins":["executor profile"],"tier":1,"secret":true,"value":"***","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"DEPLOY","origins":["repository app"],"tier":1,"secret":true,"value":"***","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"EDITOR","origins":["executor profile"],"tier":1,"secret":false,"value":"vim","overridden":["agent profile"],"resolved":true,"problem":""},` +
		`{"key":"GH","origins":["agent profile"],"tier":2,"secret":true,"value":"***","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"KANDEV_SESSION_ID","origins":["managed runtime"],"tier":1,"secret":false,"value":"\u003csession id\u003e","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"KANDEV_TASK_DIR","origins":["managed runtime"],"tier":1,"secret":false,"value":"\u003ctask dir\u003e","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"KANDEV_TASK_ID","origins":["managed runtime"],"tier":1,"secret":false,"value":"\u003ctask id\u003e","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"LANG","origins":["managed agent defaults"],"tier":3,"secret":false,"value":"C.UTF-8","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"NODE_ENV","origins":["executor profile"],"tier":1,"secret":false,"value":"production","overridden":[],"resolved":true,"problem":""},` +
		`{"key":"TERM","origins":["managed agent defaults"],"tier":3,"secret":false,"value":"xterm-256color","overridden":[],"resolved":true,"problem":""}` +
		`]`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	if strings.Contains(string(b), "REFNAME") || strings.Contains(string(b), "GH_TOKEN") {
		t.Fatal("a reference name leaked")
	}
}

// The --explain of a conflicting set is the launch's conflict (exit 10).
func TestExplainConflict(t *testing.T) {
	p := mustProfile(t, "name: p\nhost: h\nenv: {NODE_ENV: production}\n")
	launch, err := ParseLaunchEnv([]string{"NODE_ENV=dev"})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Explain(Assemble(RuntimePlaceholders(), p, nil, launch))
	var ce *ConflictError
	if rows != nil || !errors.As(err, &ce) || !reflect.DeepEqual(ce, &ConflictError{Key: "NODE_ENV", Origins: []string{EP, LA}}) {
		t.Fatalf("got %v %v", rows, err)
	}
}
