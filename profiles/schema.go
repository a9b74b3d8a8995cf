// Package profiles is the executor-profile and agent-preset schema: a strict
// YAML decoder, validation, secret references, and the pure
// environment-precedence resolver (the rules are in docs/profiles.md;
// DECISIONS.md records the choices behind them).
// Nothing here does I/O: secrets are revealed by a function the caller
// injects.
package profiles

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DefaultShell is applied by the decoder when a profile names none: sh is
// the only shell every POSIX host is sure to have. An absent workdir_root
// stays empty: the host's root (host add --workdir-root) applies then.
const DefaultShell = "sh"

// RefKind names a reference form; the values are the YAML and JSON keys.
type RefKind string

const (
	RefSecret   RefKind = "secret"    // a secret in the local store
	RefFromEnv  RefKind = "from_env"  // a variable of the launching process
	RefFromFile RefKind = "from_file" // a file on the launching machine
)

// Ref is a value fetched at launch. The zero Ref means "no reference".
// String and GoString hide Name so a reference never leaks through %v.
type Ref struct {
	Kind RefKind
	Name string
}

// IsSet reports whether r is a reference rather than the zero Ref.
func (r Ref) IsSet() bool { return r.Kind != "" }

func (r Ref) String() string {
	if !r.IsSet() {
		return "{}"
	}
	return "{" + string(r.Kind) + ": ***}"
}

func (r Ref) GoString() string { return r.String() }

// EnvEntry is one environment variable as authored: a literal, or a Ref.
// The key keeps its case; lists of entries keep file order.
type EnvEntry struct {
	Key     string
	Literal string // meaningful only when Ref is not set
	Ref     Ref
}

func (e EnvEntry) String() string {
	if e.Ref.IsSet() {
		return e.Key + "=" + e.Ref.String()
	}
	return e.Key + "=" + e.Literal
}

// envEntryJSON is the stored form: the key plus exactly one of the others.
type envEntryJSON struct {
	Key      string  `json:"key"`
	Value    *string `json:"value,omitempty"`
	Secret   *string `json:"secret,omitempty"`
	FromEnv  *string `json:"from_env,omitempty"`
	FromFile *string `json:"from_file,omitempty"`
}

func (e EnvEntry) MarshalJSON() ([]byte, error) {
	j := envEntryJSON{Key: e.Key}
	name := e.Ref.Name
	switch e.Ref.Kind {
	case "":
		lit := e.Literal
		j.Value = &lit
	case RefSecret:
		j.Secret = &name
	case RefFromEnv:
		j.FromEnv = &name
	case RefFromFile:
		j.FromFile = &name
	default:
		return nil, fmt.Errorf("env %q: unknown reference kind %q", e.Key, e.Ref.Kind)
	}
	return json.Marshal(j)
}

func (e *EnvEntry) UnmarshalJSON(b []byte) error {
	var j envEntryJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	out := EnvEntry{Key: j.Key}
	n := 0
	for _, f := range []struct {
		kind RefKind
		v    *string
	}{{"", j.Value}, {RefSecret, j.Secret}, {RefFromEnv, j.FromEnv}, {RefFromFile, j.FromFile}} {
		if f.v == nil {
			continue
		}
		n++
		if f.kind == "" {
			out.Literal = *f.v
		} else {
			out.Ref = Ref{Kind: f.kind, Name: *f.v}
		}
	}
	if n != 1 {
		return fmt.Errorf("env %q: want exactly one of value, secret, from_env, from_file", j.Key)
	}
	*e = out
	return nil
}

// Profile is an executor profile (docs/profiles.md).
type Profile struct {
	Name           string       `json:"name"`
	Host           string       `json:"host"`
	WorkdirRoot    string       `json:"workdir_root"`
	Shell          string       `json:"shell"`
	Env            []EnvEntry   `json:"env"`
	Repositories   []Repository `json:"repositories"`
	PrepareScript  string       `json:"prepare_script"`
	PrepareTimeout string       `json:"prepare_timeout,omitempty"` // Go duration; "" = the default (10m)
	CleanupScript  string       `json:"cleanup_script"`
	ReclaimTaskDir bool         `json:"reclaim_task_dir"`
	MaxRuntime     string       `json:"max_runtime,omitempty"`  // Go duration; "" = unbounded
	IdleTimeout    string       `json:"idle_timeout,omitempty"` // Go duration; "" = unbounded
	// ArchiveAfter: `sweep` archives a task idle this long (Go duration;
	// "" = never).
	ArchiveAfter string `json:"archive_after,omitempty"`

	src source // file positions when decoded from YAML; zero from JSON
}

// Repository is one checkout; the first of a profile is the primary one.
type Repository struct {
	Name    string     `json:"name"`
	URL     string     `json:"url"`
	Branch  string     `json:"branch"`
	Secrets []EnvEntry `json:"secrets"` // secret references only
}

// AgentPreset is an agent command and its env (the "agent profile" origin).
type AgentPreset struct {
	Name    string     `json:"name"`
	Command []string   `json:"command"`
	Env     []EnvEntry `json:"env"`

	src source
}

// MarshalJSON writes empty lists as [] (docs/contract.md, "Conventions").
func (p Profile) MarshalJSON() ([]byte, error) {
	type plain Profile
	q := plain(p)
	q.Env = nonNil(q.Env)
	// A copy, so the caller's repositories are not written to.
	q.Repositories = append([]Repository{}, p.Repositories...)
	for i := range q.Repositories {
		q.Repositories[i].Secrets = nonNil(q.Repositories[i].Secrets)
	}
	return json.Marshal(q)
}

func (a AgentPreset) MarshalJSON() ([]byte, error) {
	type plain AgentPreset
	q := plain(a)
	q.Command = nonNil(q.Command)
	q.Env = nonNil(q.Env)
	return json.Marshal(q)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
