package executor

import (
	"context"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// AgentView is a stored agent preset with its revision.
type AgentView struct {
	Agent     *profiles.AgentPreset
	Revision  uint64
	UpdatedAt time.Time
}

func (v AgentView) MarshalJSON() ([]byte, error) { return withMeta(v.Agent, v.Revision, v.UpdatedAt) }

// ApplyAgent decodes an agent preset strictly and creates or updates it.
func (e *Executor) ApplyAgent(ctx context.Context, file string, data []byte) (ApplyResult, error) {
	a, err := profiles.DecodeAgent(file, data)
	if err != nil {
		return ApplyResult{}, err
	}
	return e.applyRecord(ctx, records.KindAgent, a.Name, a, false, nil)
}

// ListAgents returns every agent preset, sorted by name ([] when none).
func (e *Executor) ListAgents(ctx context.Context) ([]AgentView, error) {
	as, recs, err := records.List[profiles.AgentPreset](ctx, e.cfg.Store, records.KindAgent)
	if err != nil {
		return nil, err
	}
	out := make([]AgentView, len(as))
	for i, a := range as {
		out[i] = AgentView{Agent: a, Revision: recs[i].Revision, UpdatedAt: recs[i].UpdatedAt}
	}
	return out, nil
}

// AgentNames lists agent preset names from local state (shell completion).
func (e *Executor) AgentNames(ctx context.Context) ([]string, error) {
	return records.Names(ctx, e.cfg.Store, records.KindAgent)
}

// ShowAgent returns one agent preset.
func (e *Executor) ShowAgent(ctx context.Context, name string) (AgentView, error) {
	a, rec, err := records.Get[profiles.AgentPreset](ctx, e.cfg.Store, records.KindAgent, name)
	if err != nil {
		return AgentView{}, err
	}
	return AgentView{Agent: a, Revision: rec.Revision, UpdatedAt: rec.UpdatedAt}, nil
}

// RemoveAgent forgets an agent preset; refused while tasks use it unless
// force (tasks name their preset in an "agent" field).
func (e *Executor) RemoveAgent(ctx context.Context, name string, force bool) error {
	return removeUnused[profiles.AgentPreset](ctx, e.cfg.Store, records.KindAgent, name, force, func(tx state.Tx) ([]string, error) {
		return tasksUsing(tx, "agent", name, nil)
	})
}
