package reclaim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// Request asks the host about many task directories at once: one helper
// call per host, however many directories.
type Request struct {
	Targets []Target `json:"targets"`
	// ProbeTimeoutSeconds bounds each git process (default 60): one that
	// runs longer is unknown, and unknown keeps the directory.
	ProbeTimeoutSeconds int `json:"probe_timeout_seconds,omitempty"`
	// TimeoutSeconds bounds the call (default 10 minutes). A directory
	// not reached by then fails (timed_out) and is retried; no removal
	// starts after it.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Parallelism: directories handled at once (default 2 × CPUs).
	Parallelism int `json:"parallelism,omitempty"`
}

// Report answers a Request, one result per target in the same order.
type Report struct {
	Results []Result `json:"results"`
	// GitProcesses is how many git processes the call ran: one per
	// checkout (two where its index is left to git ls-files, more where a
	// ref is not exactly a remote tip) plus three per distinct remote URL
	// (its fetch), whatever the count of directories sharing it.
	GitProcesses int64 `json:"git_processes"`
}

// Result is one directory's verdict and, after Apply, what was done.
type Result struct {
	Path    string  `json:"path"`              // <root>/tasks/<dir>
	TaskID  string  `json:"task_id"`           // as its marker says; "" when it has none
	Action  Action  `json:"action"`            // the proof's verdict: remove, skip or fail
	Outcome Outcome `json:"outcome,omitempty"` // Apply only: removed, skipped or failed
	Reason  Reason  `json:"reason,omitempty"`
	Detail  string  `json:"detail,omitempty"`
	// Identity of the directory proven (give it back to Apply as the
	// target's Identity so a directory swapped in meanwhile is kept).
	Identity   *Identity `json:"identity,omitempty"`
	Bytes      int64     `json:"bytes"`
	AgeSeconds int64     `json:"age_seconds"`
	// Proof: for a directory proven removable, what proved each of its
	// checkouts' work upstream, and when.
	Proof    []CheckoutProof `json:"proof,omitempty"`
	ProvenAt time.Time       `json:"proven_at,omitzero"`
	// Remains: Apply only, a removal that failed halfway, what it left
	// (unchanged since its proof). Give it back as the target's Remains
	// so the next Apply finishes it; nil when it is unknown.
	Remains []string `json:"remains,omitempty"`
}

const (
	defaultProbeTimeout = 60 * time.Second
	defaultCallTimeout  = 10 * time.Minute
)

// host is one call's shared state.
type host struct {
	uid          int
	probeTimeout time.Duration
	remotes      remoteTips
	scratch      scratchRepos // the fetches' repositories, removed when the call ends
	lenders      lenders
	lentStores   stores
	gitRuns      atomic.Int64 // git processes started, for the benchmark's report
	gits         gitGroups    // those running now, for the in-use check (gitgroups.go)

	proofProcs *procsRecent // the process table for the proofs of the batch being proven

	mountsOnce sync.Once
	mounts     []string
	mountsErr  error
}

// Prove gathers the evidence for every target and decides, touching
// nothing: the plan.
func Prove(ctx context.Context, req Request) (*Report, error) { return run(ctx, req, false) }

// Apply proves every target again, now, and removes what the proof
// allows. A target's Identity from an earlier Prove must still match.
func Apply(ctx context.Context, req Request) (*Report, error) { return run(ctx, req, true) }

func run(ctx context.Context, req Request, apply bool) (*Report, error) {
	for i, t := range req.Targets {
		if t.InstallationID == "" {
			return nil, &taskdir.Error{Code: taskdir.CodeBadRequest, Message: fmt.Sprintf("target %d (%q): installation_id is empty", i, t.Dir)}
		}
	}
	return newHost(req.ProbeTimeoutSeconds).run(ctx, req, apply), nil
}

func (h *host) run(ctx context.Context, req Request, apply bool) *Report {
	timeout := defaultCallTimeout
	if req.TimeoutSeconds > 0 {
		timeout = time.Duration(req.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer h.scratch.removeAll()
	rep := &Report{Results: make([]Result, len(req.Targets))}
	// A directory named twice is proven once: its second claim would take
	// over the first's renamed directory while the first still holds it.
	type named struct{ root, dir string }
	seen := make(map[named]bool, len(req.Targets))
	var targets []Target
	var at []int
	for i, t := range req.Targets {
		if seen[named{t.Root, t.Dir}] {
			rep.Results[i] = namedTwice(t, apply)
			continue
		}
		seen[named{t.Root, t.Dir}] = true
		targets, at = append(targets, t), append(at, i)
	}
	results := make([]Result, len(targets))
	h.runBatches(ctx, targets, results, parallelism(req.Parallelism), apply)
	for k, i := range at {
		rep.Results[i] = results[k]
	}
	rep.GitProcesses = h.gitRuns.Load()
	return rep
}

// namedTwice is the result of a target the request named before: the
// first is the one proven, and holds its lock meanwhile.
func namedTwice(t Target, apply bool) Result {
	r := Result{Path: t.Path(), Action: Fail, Reason: Busy, Detail: fmt.Sprintf("%s is named twice in one request; only the first is proven", t.Path())}
	if apply {
		r.Outcome = Failed
	}
	return r
}

func newHost(probeSeconds int) *host {
	h := &host{uid: os.Getuid(), probeTimeout: defaultProbeTimeout, proofProcs: &procsRecent{}}
	if probeSeconds > 0 {
		h.probeTimeout = time.Duration(probeSeconds) * time.Second
	}
	return h
}

func parallelism(n int) int {
	if n > 0 {
		return n
	}
	return 2 * runtime.NumCPU()
}

// forEach runs f(0..n-1) on at most par goroutines; each writes only its
// own slot, so the results keep the targets' order.
func forEach(n, par int, f func(i int)) {
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(n, par) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// stopped is the result of target t when the call ended (ctx) before
// its proof was done.
func stopped(ctx context.Context, t Target, apply bool) Result {
	v := stopVerdict(ctx, t.Path(), "proven")
	r := Result{Path: t.Path(), Action: v.Action, Reason: v.Reason, Detail: v.Detail}
	if apply {
		r.Outcome = Failed
	}
	return r
}

// stopVerdict is the failure of the directory at path that ctx, the
// call's, ended before it was what: its time ran out, or the caller
// interrupted it (a cancel stops the call as its time running out does,
// and says which it was).
func stopVerdict(ctx context.Context, path, what string) Verdict {
	if errors.Is(ctx.Err(), context.Canceled) {
		return Verdict{Action: Fail, Reason: Cancelled, Detail: fmt.Sprintf("the call was interrupted before %s was %s", path, what)}
	}
	return Verdict{Action: Fail, Reason: TimedOut, Detail: fmt.Sprintf("the call's time ran out before %s was %s", path, what)}
}

// mountTable is read once per call.
func (h *host) mountTable() ([]string, error) {
	h.mountsOnce.Do(func() { h.mounts, h.mountsErr = mountTable() })
	return h.mounts, h.mountsErr
}
