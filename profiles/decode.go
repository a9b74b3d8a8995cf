package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kdlbs/kandev-exec/internal/suggest"
)

// source remembers where a decoded document's fields were, so validation
// can name file and line. Paths look like "host", "env.KEY",
// "repositories[1].url" or "repositories[1].secrets.KEY".
type source struct {
	file  string
	lines map[string]int
}

func (s source) errorf(path, key, format string, args ...any) *DecodeError {
	return &DecodeError{File: s.file, Line: s.lines[path], Key: key, Msg: fmt.Sprintf(format, args...)}
}

// DecodeProfile reads one profile from YAML and validates everything that
// does not need the state store (see Validate; the host is checked there).
//
// The decoder is strict: unknown, duplicate or non-scalar keys, wrong types,
// aliases and merge keys are errors naming file, line and key. A file holds
// exactly one YAML document: a second one is an error rather than a profile
// silently ignored. Scalars are taken as their source text, so `PORT: 8080`
// and `DEBUG: true` are the strings "8080" and "true" exactly as written (no
// number reformatting can happen); null is never a string.
func DecodeProfile(filename string, data []byte) (*Profile, error) {
	d, root, err := newDecoder(filename, data)
	if err != nil {
		return nil, err
	}
	p := &Profile{Shell: DefaultShell, Env: []EnvEntry{}, Repositories: []Repository{}}
	err = d.mapping(root, "profile", "", func(key, path string, v *yaml.Node) error {
		switch key {
		case "name":
			return d.str(v, key, path, &p.Name)
		case "host":
			return d.str(v, key, path, &p.Host)
		case "workdir_root":
			return d.str(v, key, path, &p.WorkdirRoot)
		case "shell":
			return d.str(v, key, path, &p.Shell)
		case "env":
			return d.env(v, "env", path, &p.Env)
		case "repositories":
			return d.repositories(v, &p.Repositories)
		case "prepare_script":
			return d.str(v, key, path, &p.PrepareScript)
		case "prepare_timeout":
			return d.str(v, key, path, &p.PrepareTimeout)
		case "cleanup_script":
			return d.str(v, key, path, &p.CleanupScript)
		case "reclaim_task_dir":
			return d.boolean(v, key, path, &p.ReclaimTaskDir)
		case "max_runtime":
			return d.str(v, key, path, &p.MaxRuntime)
		case "idle_timeout":
			return d.str(v, key, path, &p.IdleTimeout)
		case "archive_after":
			return d.str(v, key, path, &p.ArchiveAfter)
		}
		return d.unknown(key, path, "profile", keysAt(ProfileFields, ""))
	})
	if err != nil {
		return nil, err
	}
	p.src = d.src
	if err := p.Validate(nil); err != nil {
		return nil, err
	}
	return p, nil
}

// DecodeAgent reads one agent preset (name, command, env) with the same
// strictness as DecodeProfile, and validates it.
func DecodeAgent(filename string, data []byte) (*AgentPreset, error) {
	d, root, err := newDecoder(filename, data)
	if err != nil {
		return nil, err
	}
	a := &AgentPreset{Command: []string{}, Env: []EnvEntry{}}
	err = d.mapping(root, "agent", "", func(key, path string, v *yaml.Node) error {
		switch key {
		case "name":
			return d.str(v, key, path, &a.Name)
		case "command":
			return d.command(v, &a.Command)
		case "env":
			return d.env(v, "env", path, &a.Env)
		}
		return d.unknown(key, path, "agent", keysAt(AgentFields, ""))
	})
	if err != nil {
		return nil, err
	}
	a.src = d.src
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// Input bounds. Profiles and agent presets are read whole and stored, and
// every later `ls` decodes them again, so neither may grow without limit.
const (
	// MaxFileSize bounds a profile or agent preset file.
	MaxFileSize = 1 << 20
	// MaxEnvKeys bounds the env keys of one profile (its env and every
	// repository's secrets together) or one agent preset.
	MaxEnvKeys = 4096
)

type decoder struct {
	src     source
	envKeys int // env keys seen so far in this document
}

func newDecoder(filename string, data []byte) (*decoder, *yaml.Node, error) {
	d := &decoder{src: source{file: filename, lines: map[string]int{}}}
	if len(data) > MaxFileSize {
		return nil, nil, &DecodeError{File: filename, Msg: fmt.Sprintf("larger than %d bytes (1 MiB), the limit for a profile or agent file", MaxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &DecodeError{File: filename, Msg: "empty file: want a YAML mapping"}
		}
		return nil, nil, syntaxError(filename, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, nil, &DecodeError{File: filename, Line: extra.Line, Msg: "a second YAML document: one document per file"}
	case !errors.Is(err, io.EOF):
		return nil, nil, syntaxError(filename, data, err)
	}
	if len(doc.Content) != 1 {
		return nil, nil, &DecodeError{File: filename, Msg: "empty file: want a YAML mapping"}
	}
	return d, doc.Content[0], nil
}

func (d *decoder) errAt(n *yaml.Node, key, format string, args ...any) error {
	return &DecodeError{File: d.src.file, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// unknown names the key, where it was, and the known keys it is close to
// (`repos` → repositories): the reference tables list them.
func (d *decoder) unknown(key, path, what string, known []string) error {
	return d.src.errorf(path, key, "unknown key %q in %s%s", key, what, suggest.Phrase(key, known))
}

// mapping walks a mapping node, rejecting non-scalar, merge and duplicate
// keys, and records each key's line under prefix+key.
func (d *decoder) mapping(n *yaml.Node, what, prefix string, each func(key, path string, v *yaml.Node) error) error {
	if err := d.kind(n, what, what, yaml.MappingNode); err != nil {
		return err
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode || v.Kind == yaml.AliasNode {
			return d.errAt(k, k.Value, "YAML aliases are not supported in %s", what)
		}
		if k.ShortTag() == "!!merge" {
			return d.errAt(k, k.Value, "merge keys (<<) are not supported in %s", what)
		}
		if k.Kind != yaml.ScalarNode || !plainTag(k) {
			return d.errAt(k, "", "keys in %s must be plain strings", what)
		}
		if first, dup := seen[k.Value]; dup {
			return d.errAt(k, k.Value, "duplicate key %q in %s (first at line %d)", k.Value, what, first)
		}
		seen[k.Value] = k.Line
		path := prefix + k.Value
		d.src.lines[path] = k.Line
		if err := each(k.Value, path, v); err != nil {
			return err
		}
	}
	return nil
}

// plainTag accepts the scalar types whose source text is a usable string.
func plainTag(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool":
		return true
	}
	return false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.ShortTag() == "!!null" {
		return "null"
	}
	return "a " + strings.TrimPrefix(n.ShortTag(), "!!") + " scalar"
}

func (d *decoder) kind(n *yaml.Node, key, what string, want yaml.Kind) error {
	if n.Kind == want {
		return nil
	}
	name := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[want]
	return d.errAt(n, key, "%s must be %s, not %s", what, name, kindName(n))
}

// scalar reads a non-null scalar as its source text.
func (d *decoder) scalar(n *yaml.Node, key, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || !plainTag(n) {
		return "", d.errAt(n, key, "%s must be a string, not %s", what, kindName(n))
	}
	return n.Value, nil
}

func (d *decoder) str(n *yaml.Node, key, path string, dst *string) error {
	d.src.lines[path] = n.Line
	v, err := d.scalar(n, key, fmt.Sprintf("%q", key))
	*dst = v
	return err
}

func (d *decoder) boolean(n *yaml.Node, key, path string, dst *bool) error {
	d.src.lines[path] = n.Line
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return d.errAt(n, key, "%q must be true or false, not %s", key, kindName(n))
	}
	*dst = strings.EqualFold(n.Value, "true")
	return nil
}

func (d *decoder) command(n *yaml.Node, dst *[]string) error {
	if err := d.kind(n, "command", `"command"`, yaml.SequenceNode); err != nil {
		return err
	}
	for i, item := range n.Content {
		d.src.lines[fmt.Sprintf("command[%d]", i)] = item.Line
		arg, err := d.scalar(item, "command", fmt.Sprintf("command[%d]", i))
		if err != nil {
			return err
		}
		*dst = append(*dst, arg)
	}
	return nil
}

// env reads a mapping of entries in file order. Each value is a scalar
// literal or a one-key mapping naming a reference; null, an empty mapping
// or two references are errors.
func (d *decoder) env(n *yaml.Node, what, path string, dst *[]EnvEntry) error {
	return d.mapping(n, what, path+".", func(key, _ string, v *yaml.Node) error {
		if d.envKeys++; d.envKeys > MaxEnvKeys {
			return d.errAt(v, key, "more than %d env keys, the limit for one profile or agent (env and repository secrets together)", MaxEnvKeys)
		}
		e := EnvEntry{Key: key}
		switch {
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
			return d.errAt(v, key, "%s %q has no value: want a string or one of %s", what, key, refForms)
		case v.Kind == yaml.ScalarNode:
			lit, err := d.scalar(v, key, fmt.Sprintf("%s %q", what, key))
			if err != nil {
				return err
			}
			e.Literal = lit
		case v.Kind == yaml.MappingNode:
			ref, err := d.ref(v, key, what)
			if err != nil {
				return err
			}
			e.Ref = ref
		default:
			return d.errAt(v, key, "%s %q must be a string or one of %s, not %s", what, key, refForms, kindName(v))
		}
		*dst = append(*dst, e)
		return nil
	})
}

const refForms = "{secret: NAME}, {from_env: VAR}, {from_file: PATH}"

func (d *decoder) ref(n *yaml.Node, key, what string) (Ref, error) {
	if len(n.Content) != 2 {
		return Ref{}, d.errAt(n, key, "%s %q: want exactly one of %s", what, key, refForms)
	}
	k, v := n.Content[0], n.Content[1]
	kind := RefKind(k.Value)
	if k.Kind != yaml.ScalarNode || (kind != RefSecret && kind != RefFromEnv && kind != RefFromFile) {
		return Ref{}, d.errAt(k, key, "%s %q: unknown reference%s (want one of %s)", what, key,
			suggest.Phrase(k.Value, []string{string(RefSecret), string(RefFromEnv), string(RefFromFile)}), refForms)
	}
	name, err := d.scalar(v, key, fmt.Sprintf("%s %q: %s", what, key, kind))
	if err != nil {
		return Ref{}, err
	}
	return Ref{Kind: kind, Name: name}, nil
}

func (d *decoder) repositories(n *yaml.Node, dst *[]Repository) error {
	d.src.lines["repositories"] = n.Line
	if err := d.kind(n, "repositories", `"repositories"`, yaml.SequenceNode); err != nil {
		return err
	}
	for i, item := range n.Content {
		prefix := fmt.Sprintf("repositories[%d]", i)
		d.src.lines[prefix] = item.Line
		r := Repository{Secrets: []EnvEntry{}}
		err := d.mapping(item, prefix, prefix+".", func(key, path string, v *yaml.Node) error {
			switch key {
			case "name":
				return d.str(v, key, path, &r.Name)
			case "url":
				return d.str(v, key, path, &r.URL)
			case "branch":
				return d.str(v, key, path, &r.Branch)
			case "secrets":
				return d.env(v, prefix+" secret", path, &r.Secrets)
			}
			return d.unknown(key, path, prefix, keysAt(ProfileFields, "repositories[]."))
		})
		if err != nil {
			return err
		}
		*dst = append(*dst, r)
	}
	return nil
}
