package reclaim

import (
	"context"
	"slices"
	"sync"
)

// batchSize is how many directories share one reading of the process
// table for their proofs' in-use checks, and, in an apply, one more for
// their removals' rechecks: reading every process of the host costs as
// much as proving a few directories, and a thousand directories should
// not read it two thousand times.
const batchSize = 64

// runBatches proves targets (and with apply removes what the proofs
// allow) a batch at a time, results[i] being targets[i]'s. An apply's
// removals of one batch run while the next batch is proven, so that the
// proof's git processes and the removal's system calls overlap; one
// batch at most is being removed, so at most two batches' locks are
// held. A helper killed meanwhile leaves the renamed directories whole
// under their trash names (nothing is emptied before its recheck), and
// the next apply proves each in full, git included, as any interrupted
// removal the CLI kept no report for (trash.go); a call whose time runs
// out, or that the caller cancels, gives each its name back
// (finishRemoval); what is not yet proven is not started.
func (h *host) runBatches(ctx context.Context, targets []Target, results []Result, par int, apply bool) {
	var removing sync.WaitGroup
	defer removing.Wait()
	for start := 0; start < len(targets); start += batchSize {
		ts, rs := targets[start:min(start+batchSize, len(targets))], results[start:min(start+batchSize, len(targets))]
		h.proofProcs = &procsRecent{}
		if !apply {
			forEach(len(ts), par, func(i int) {
				if ctx.Err() != nil {
					rs[i] = stopped(ctx, ts[i], false)
					return
				}
				rs[i] = h.prove(ctx, ts[i])
			})
			continue
		}
		started := h.startBatch(ctx, ts, rs, par)
		if !slices.ContainsFunc(started, func(rm *removal) bool { return rm != nil }) {
			continue
		}
		// Read after every rename of the batch: each directory's recheck
		// still sees every process that could have reached it by its
		// task's name, as when the table was read once per directory.
		// The batch before may still be being removed meanwhile.
		procs := readProcs(ctx, h.uid)
		removing.Wait()
		removing.Add(1)
		go func() {
			defer removing.Done()
			forEach(len(ts), par, func(i int) {
				if rm := started[i]; rm != nil {
					rs[i] = applied(rm.r, h.finishRemoval(ctx, procs, rm))
				}
			})
		}()
	}
}

// startBatch proves each of targets again and renames each one the
// proof allows to its trash name (apply): those are returned, each in
// its target's place, for their recheck and removal (finishRemoval);
// results holds the others' final results.
func (h *host) startBatch(ctx context.Context, targets []Target, results []Result, par int) []*removal {
	started := make([]*removal, len(targets))
	forEach(len(targets), par, func(i int) {
		if ctx.Err() != nil {
			results[i] = stopped(ctx, targets[i], true)
			return
		}
		results[i], started[i] = h.apply(ctx, targets[i])
	})
	return started
}
