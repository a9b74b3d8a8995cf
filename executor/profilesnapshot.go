package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// errHasSnapshot: the task got a snapshot since it was listed.
var errHasSnapshot = errors.New("task has a profile snapshot")

// snapshotArchived gives each archived task of profile name that has no
// snapshot one of the profile as it is now, each write journaled on the
// task. A profile that cannot be read is left to the removal to report.
func (e *Executor) snapshotArchived(ctx context.Context, name string) error {
	p, rec, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, name)
	if err != nil {
		return nil
	}
	tasks, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Profile != name || t.Phase != records.PhaseArchived || t.ProfileSnapshot != nil {
			continue
		}
		d := records.DetailFor(t)
		d.Message = fmt.Sprintf("profile rm %s: the task keeps revision %d of the profile for its teardown", name, rec.Revision)
		_, err := records.MutateEvent(ctx, e.cfg.Store, records.KindTask, t.ID, records.Event("task.profile_snapshot", d), func(x *records.Task) error {
			if x.ProfileSnapshot != nil {
				return errHasSnapshot
			}
			x.ProfileSnapshot = snapshotOf(p, x.Root)
			return nil
		})
		if err != nil && !errors.Is(err, errHasSnapshot) {
			return err
		}
	}
	return nil
}
