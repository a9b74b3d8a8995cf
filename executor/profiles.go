package executor

import (
	"context"
	"errors"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// ProfileView is a stored profile as `profile show --json` prints it: the
// document's fields, then revision and updated_at.
type ProfileView struct {
	Profile   *profiles.Profile
	Revision  uint64
	UpdatedAt time.Time
}

func (v ProfileView) MarshalJSON() ([]byte, error) {
	return withMeta(v.Profile, v.Revision, v.UpdatedAt)
}

// ApplyProfile decodes a profile file strictly, checks its host against
// the host records, and creates or updates the stored profile. Problems
// are *profiles.DecodeError naming file and line; a profile no task could
// start from is refused too. The host check is part of the write's
// transaction, so a concurrent `host rm` either sees the profile or makes
// this apply fail.
func (e *Executor) ApplyProfile(ctx context.Context, file string, data []byte) (ApplyResult, error) {
	return e.applyProfile(ctx, file, data, false)
}

// PlanProfile is ApplyProfile without the write: the same checks, and
// the result the apply would report (`profile apply --dry-run`).
func (e *Executor) PlanProfile(ctx context.Context, file string, data []byte) (ApplyResult, error) {
	return e.applyProfile(ctx, file, data, true)
}

func (e *Executor) applyProfile(ctx context.Context, file string, data []byte, dryRun bool) (ApplyResult, error) {
	p, err := profiles.DecodeProfile(file, data)
	if err != nil {
		return ApplyResult{}, err
	}
	if err := p.CheckLaunchable(); err != nil {
		return ApplyResult{}, err
	}
	return e.applyRecord(ctx, records.KindProfile, p.Name, p, dryRun, func(tx state.Tx) error {
		var lookupErr error
		known := func(h string) bool {
			_, err := tx.Get(records.KindHost, h)
			if err != nil && !errors.Is(err, state.ErrNotFound) {
				lookupErr = err
			}
			return err == nil
		}
		err := p.Validate(known)
		if lookupErr != nil {
			return lookupErr
		}
		return err
	})
}

// ListProfiles returns every profile, sorted by name ([] when none).
func (e *Executor) ListProfiles(ctx context.Context) ([]ProfileView, error) {
	ps, recs, err := records.List[profiles.Profile](ctx, e.cfg.Store, records.KindProfile)
	if err != nil {
		return nil, err
	}
	out := make([]ProfileView, len(ps))
	for i, p := range ps {
		out[i] = ProfileView{Profile: p, Revision: recs[i].Revision, UpdatedAt: recs[i].UpdatedAt}
	}
	return out, nil
}

// ProfileNames lists profile names from local state (shell completion).
func (e *Executor) ProfileNames(ctx context.Context) ([]string, error) {
	return records.Names(ctx, e.cfg.Store, records.KindProfile)
}

// ShowProfile returns one profile.
func (e *Executor) ShowProfile(ctx context.Context, name string) (ProfileView, error) {
	p, rec, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, name)
	if err != nil {
		return ProfileView{}, err
	}
	return ProfileView{Profile: p, Revision: rec.Revision, UpdatedAt: rec.UpdatedAt}, nil
}

// RemoveProfile forgets a profile. While tasks use it the answer is an
// *InUseError, unless force. An archived task recorded before snapshots
// is first given one of the profile as it is now, which is what its
// teardown would read: it then outlives the profile as a newer task does
// (a forced removal goes on without them when the tasks cannot be read).
func (e *Executor) RemoveProfile(ctx context.Context, name string, force bool) error {
	if err := e.snapshotArchived(ctx, name); err != nil && !force {
		return err
	}
	return removeUnused[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, name, force, func(tx state.Tx) ([]string, error) {
		return tasksUsing(tx, "profile", name, needsProfile)
	})
}

// EnvOptions select what `profile env` assembles.
type EnvOptions struct {
	Profile string
	Agent   string   // "" = no agent preset
	Launch  []string // --env K=V flags
}

// ProfileEnv explains the environment a launch would get: runtime values
// as placeholders and every reference masked. Each winning reference is
// fetched as a launch would fetch it and the value dropped at once: one
// that cannot be had is marked (Resolved false, Problem saying what to
// run) rather than failing here, and one too short to be masked in
// output is marked Unmasked. A precedence conflict is a
// *profiles.ConflictError, a bad --env a *profiles.DecodeError.
func (e *Executor) ProfileEnv(ctx context.Context, o EnvOptions) ([]profiles.ExplainEntry, error) {
	launch, err := profiles.ParseLaunchEnv(o.Launch)
	if err != nil {
		return nil, err
	}
	p, _, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, o.Profile)
	if err != nil {
		return nil, err
	}
	var agent *profiles.AgentPreset
	if o.Agent != "" {
		if agent, _, err = records.Get[profiles.AgentPreset](ctx, e.cfg.Store, records.KindAgent, o.Agent); err != nil {
			return nil, err
		}
	}
	entries, err := profiles.Explain(profiles.Assemble(profiles.RuntimePlaceholders(), p, agent, launch))
	if err != nil {
		return nil, err
	}
	profiles.Preflight(entries, e.vault.Reveal)
	return entries, nil
}
