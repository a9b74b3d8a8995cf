package executor

import (
	"context"
	"fmt"
	"slices"

	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// ApplyReclaim removes what plan marks for removal, host by host: one
// call per host proves each directory again, now, against the plan's
// identity, and removes it only if the proof allows. Local phases are
// read again first: a task that became live since the plan keeps its
// directory; an archived task's directory is removed under its claim.
// Every plan row comes back with what was done; a row its listing
// applied already (ConfirmedApply) is left as it is, even when the
// apply cannot start (the rows come with the error then). Interrupted
// (ctx ended), the helper is asked to stop, and the rows come with what
// it answered, and ctx's error.
func (e *Executor) ApplyReclaim(ctx context.Context, plan []ReclaimRow, progress func(string)) ([]ReclaimRow, error) {
	if progress == nil {
		progress = func(string) {}
	}
	view, err := e.localView(ctx)
	if err != nil {
		// Interrupted, say: what the listing removed is still to be said.
		out := slices.Clone(plan)
		for i := range out {
			if r := &out[i]; r.Action == string(reclaim.Remove) {
				r.Action, r.Reason, r.Detail, r.Err = ReclaimFailed, "", err.Error(), err
			}
		}
		return out, err
	}
	out := slices.Clone(plan)
	e.stopAllOrphans(ctx, out, view, progress)
	byHost := map[string][]int{}
	var order []string
	for i := range out {
		r := &out[i]
		switch {
		case r.Action == ReclaimFailed, r.Action == ReclaimRemoved, r.Action == ReclaimSkipped:
			continue // failed, or applied already with its listing (reclaimfused.go)
		case r.Action != string(reclaim.Remove):
			r.Action = ReclaimSkipped
			continue
		}
		if phase, known := view.Phases[r.TaskID]; known && records.Phase(phase).Live() {
			r.Action, r.Reason, r.Detail = ReclaimSkipped, string(reclaim.LiveTask), fmt.Sprintf("task %s is %s here now", r.TaskID, phase)
			continue
		}
		if _, ok := byHost[r.Host]; !ok {
			order = append(order, r.Host)
		}
		byHost[r.Host] = append(byHost[r.Host], i)
	}
	for _, host := range order {
		progress(fmt.Sprintf("Removing %d directories on %s", len(byHost[host]), host))
		e.applyHost(ctx, host, out, byHost[host], view)
	}
	return out, ctx.Err()
}

// applyHost applies the rows idx of host: archived tasks claimed first,
// then one helper call, then each removed archived task recorded absent
// under its claim.
func (e *Executor) applyHost(ctx context.Context, host string, rows []ReclaimRow, idx []int, view reclaim.LocalView) {
	fail := func(err error) {
		for _, i := range idx {
			rows[i].Action, rows[i].Reason, rows[i].Detail, rows[i].Err = ReclaimFailed, "", err.Error(), err
		}
	}
	h, _, err := e.getHost(ctx, host)
	if err != nil {
		fail(err)
		return
	}
	claims := map[string]*taskClaim{}
	defer func() {
		for _, tc := range claims {
			tc.release(ctx)
		}
	}()
	var targets []reclaim.Target
	var sent []int
	for _, i := range idx {
		r := &rows[i]
		var remains []string
		if _, known := view.Phases[r.TaskID]; known {
			tc, err := e.claimTask(ctx, r.TaskID)
			if err != nil {
				r.Action, r.Reason, r.Detail = ReclaimSkipped, ReasonTaskBusy, err.Error()
				continue
			}
			claims[r.TaskID] = tc
			// Kept while the helper works; a lost claim ends the call.
			var stop func()
			ctx, stop = e.keep(ctx, tc.Held)
			defer stop()
			if t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, r.TaskID); err == nil && t.Teardown != nil {
				remains = t.Teardown.ReclaimRemains
			}
		}
		targets = append(targets, reclaim.Target{Root: r.Root, Dir: r.Dir, InstallationID: view.InstallationID,
			TaskID: r.TaskID, Identity: r.Identity, Enabled: true, Upstreams: view.Upstreams[r.TaskID], Remains: remains,
			Uncheckable: r.Uncheckable})
		sent = append(sent, i)
	}
	if len(targets) == 0 {
		return
	}
	hc, cv := e.kept.take(h)
	if hc == nil {
		if hc, err = e.connectHelper(ctx, h); err != nil {
			fail(err)
			return
		}
	}
	defer hc.Close()
	var rep reclaim.Report
	if err := hc.applyIn(ctx, cv, reclaim.Request{Targets: targets}, &rep); err != nil {
		fail(err)
		return
	}
	if len(rep.Results) != len(targets) {
		fail(fmt.Errorf("the host answered %d results for %d directories", len(rep.Results), len(targets)))
		return
	}
	for k, i := range sent {
		r, res := &rows[i], rep.Results[k]
		r.Action, r.Reason, r.Detail = string(res.Outcome), string(res.Reason), res.Detail
		if res.Outcome == reclaim.Removed {
			r.Proof = proofRecord(res)
		}
		tc := claims[r.TaskID]
		switch {
		case tc != nil && res.Outcome == reclaim.Removed:
			if err := e.recordReclaimed(ctx, tc, res.Detail, r.Proof); err != nil {
				r.Detail += fmt.Sprintf("; recording task %s absent failed: %v", r.TaskID, err)
			}
		case tc != nil && len(res.Remains) > 0:
			if err := recordRemains(ctx, tc, res.Remains); err != nil {
				r.Detail += fmt.Sprintf("; recording on task %s what the removal left failed: %v", r.TaskID, err)
			}
		}
	}
}

// recordReclaimed moves an archived task whose directory is proven gone
// to absent, under its claim.
func (e *Executor) recordReclaimed(ctx context.Context, tc *taskClaim, detail string, proof *records.ReclaimProof) error {
	_, err := tc.update(context.WithoutCancel(ctx), "task.absent", func(t *records.Task) error {
		if t.Phase == records.PhaseAbsent {
			return errSettled
		}
		if t.Teardown == nil {
			t.Teardown = &records.Teardown{Trigger: records.TriggerArchive}
		}
		t.Teardown.ClaimID, t.Teardown.Step = tc.ID(), records.StepReclaim
		t.Teardown.Reclaim, t.Teardown.Reason = records.ReclaimRemoved, "reclaim --apply: "+detail
		t.Teardown.ReclaimRemains, t.Teardown.Proof = nil, proof
		return t.Move(records.PhaseAbsent)
	})
	return ignoreSettled(err)
}

// recordRemains keeps on an archived task what its removal, cut short,
// left: the next apply gives it back.
func recordRemains(ctx context.Context, tc *taskClaim, remains []string) error {
	_, err := tc.update(context.WithoutCancel(ctx), "task.reclaim_interrupted", func(t *records.Task) error {
		if t.Teardown == nil {
			t.Teardown = &records.Teardown{Trigger: records.TriggerArchive}
		}
		t.Teardown.ReclaimRemains = remains
		return nil
	})
	return err
}

// RestrictToPlan keeps a fresh plan to a saved one (reclaim --apply
// --plan FILE): a directory is removed only if the saved plan marked it
// for removal, and only if it is still the directory that plan saw: the
// saved identity goes to the host, which keeps a directory swapped in
// since (changed_since_plan).
func RestrictToPlan(fresh, saved []ReclaimRow) []ReclaimRow {
	type key struct{ host, path string }
	want := map[key]ReclaimRow{}
	for _, r := range saved {
		if r.Action == string(reclaim.Remove) {
			want[key{r.Host, r.Path}] = r
		}
	}
	out := slices.Clone(fresh)
	for i := range out {
		r := &out[i]
		if r.Action != string(reclaim.Remove) {
			continue
		}
		switch s, ok := want[key{r.Host, r.Path}]; {
		case !ok:
			r.Action, r.Reason, r.Detail = string(reclaim.Keep), ReasonNotInPlan, "the saved plan does not mark it for removal"
		case s.Identity == nil:
			r.Action, r.Reason, r.Detail = string(reclaim.Keep), ReasonNotInPlan, "the saved plan does not say which directory it saw"
		default:
			id := *s.Identity
			r.Identity = &id
		}
	}
	return out
}
