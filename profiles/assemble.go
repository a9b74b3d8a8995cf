package profiles

import (
	"maps"
	"slices"
)

// Managed runtime keys set on every launch (docs/profiles.md). They are reserved,
// so no user-authored origin can collide with them.
const (
	EnvTaskID    = "KANDEV_TASK_ID"
	EnvSessionID = "KANDEV_SESSION_ID"
	EnvTaskDir   = "KANDEV_TASK_DIR"
)

// RuntimePlaceholders stand in for the managed runtime values where no task
// exists yet (`profile env`). Reserved keys cannot collide, so the verdict
// with placeholders is the verdict a launch gets.
func RuntimePlaceholders() map[string]string {
	return map[string]string{EnvTaskID: "<task id>", EnvSessionID: "<session id>", EnvTaskDir: "<task dir>"}
}

// ManagedAgentDefaults are the tier-3 defaults every agent gets unless
// another origin sets the key.
func ManagedAgentDefaults() []Definition {
	return []Definition{
		{Key: "LANG", Origin: OriginAgentDefaults, Literal: "C.UTF-8"},
		{Key: "TERM", Origin: OriginAgentDefaults, Literal: "xterm-256color"},
	}
}

// Assemble lists the definitions of one launch: the managed runtime values,
// the profile's env and repository bindings, the --env entries, the agent
// preset's env, and last the managed agent defaults for keys nothing else
// defined. p and agent may be nil. Every entry becomes a definition, an
// empty literal included: "" in a file is an explicit value (DECISIONS.md,
// "Empty and whitespace values").
func Assemble(runtime map[string]string, p *Profile, agent *AgentPreset, launch []EnvEntry) []Definition {
	var defs []Definition
	add := func(origin string, es []EnvEntry) {
		for _, e := range es {
			defs = append(defs, Definition{Key: e.Key, Origin: origin, Literal: e.Literal, Ref: e.Ref})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(runtime)) {
		defs = append(defs, Definition{Key: k, Origin: OriginManagedRuntime, Literal: runtime[k]})
	}
	if p != nil {
		add(OriginExecutorProfile, p.Env)
		for _, r := range p.Repositories {
			add(RepositoryOrigin(r.Name), r.Secrets)
		}
	}
	add(OriginLaunch, launch)
	if agent != nil {
		add(OriginAgentProfile, agent.Env)
	}
	// Defaults fill gaps only, so a reference (say LANG: {from_env: LANG})
	// is never vetoed by a default it was meant to replace.
	claimed := make(map[string]bool, len(defs))
	for _, d := range defs {
		claimed[d.Key] = true
	}
	for _, d := range ManagedAgentDefaults() {
		if !claimed[d.Key] {
			defs = append(defs, d)
		}
	}
	return defs
}
