package executor

import (
	"context"
	"encoding/json"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
)

// snapshotOf is what a task launched with p keeps for its teardown.
func snapshotOf(p *profiles.Profile, root string) *records.ProfileSnapshot {
	return &records.ProfileSnapshot{WorkdirRoot: root, Shell: p.Shell, Env: append([]profiles.EnvEntry{}, p.Env...),
		CleanupScript: p.CleanupScript, ReclaimTaskDir: p.ReclaimTaskDir}
}

// teardownProfile is the profile a task's teardown runs: the snapshot the
// task took at launch, or, for a task recorded before snapshots were, its
// profile as it is now.
func (e *Executor) teardownProfile(ctx context.Context, t *records.Task) (*profiles.Profile, error) {
	if s := t.ProfileSnapshot; s != nil {
		return &profiles.Profile{Name: t.Profile, Host: t.Host, WorkdirRoot: s.WorkdirRoot, Shell: s.Shell, Env: s.Env,
			CleanupScript: s.CleanupScript, ReclaimTaskDir: s.ReclaimTaskDir}, nil
	}
	return e.profileOf(ctx, t)
}

// needsProfile says whether a task, as stored, still needs its profile
// record: until it is absent, except once archived with a snapshot (all
// that is left is teardown, which runs the snapshot).
func needsProfile(phase records.Phase, doc map[string]json.RawMessage) bool {
	if phase == records.PhaseAbsent {
		return false
	}
	snap, ok := doc["profile_snapshot"]
	return phase != records.PhaseArchived || !ok || string(snap) == "null"
}
