package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// reclaim is the operator's tool for orphans: directories under
// <root>/tasks/ made by this installation that no live local record
// holds. The plan comes from one listing call per root (reclaim.List on
// the host, reclaim.Plan here); applying it is one call per host that
// proves every directory again, now, and removes only what the proof
// allows (reclaim.Apply). A directory of an archived task is removed
// under that task's claim, which then records it absent.

// ReclaimRow is one line of `reclaim` (docs/contract.md): a plan's verdict,
// or what --apply did.
type ReclaimRow struct {
	Host       string `json:"host"`
	Path       string `json:"path"`
	TaskID     string `json:"task_id"`
	Bytes      int64  `json:"bytes"`
	AgeSeconds int64  `json:"age_seconds"`
	// Action: remove or keep in a plan; removed, skipped or failed once
	// applied (a host that failed as a whole is one failed row).
	Action string `json:"action"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	// Root and Dir name the directory for the host (the physical root and
	// the task directory name), and Identity is what the listing saw:
	// a saved plan (--plan) gives them back.
	Root     string            `json:"root"`
	Dir      string            `json:"dir"`
	Identity *reclaim.Identity `json:"identity,omitempty"`
	// Holds: a directory that is no checkout, what its top holds;
	// Uncheckable: named with --include-uncheckable, so planned for
	// removal all the same.
	Holds       []string `json:"holds,omitempty"`
	Uncheckable bool     `json:"uncheckable,omitempty"`
	// Proof: once removed, what proved it safe (as kept on its task).
	Proof *records.ReclaimProof `json:"proof,omitempty"`
	// Running are the orphaned agents in the directory (reclaimorphans.go).
	Running []OrphanAgent `json:"running,omitempty"`
	Err     error         `json:"-"` // the host's failure, for a failed host row
}

// Row actions in a plan and once applied, and the reasons reclaim adds
// to the package's closed set.
const (
	ReclaimRemove  = string(reclaim.Remove)
	ReclaimKeep    = string(reclaim.Keep)
	ReclaimRemoved = "removed"
	ReclaimSkipped = "skipped"
	ReclaimFailed  = "failed"
	// ReasonNotInPlan: --plan FILE did not list it for removal.
	ReasonNotInPlan = "not_in_plan"
	// ReasonTaskBusy: its task's claim is held by another kandev-exec.
	ReasonTaskBusy = "task_busy"
	// ReasonTooSmall: it holds less than --min-size.
	ReasonTooSmall = "too_small"
)

// ReclaimOptions are `reclaim`'s inputs.
type ReclaimOptions struct {
	Host      string        // "" = every host
	OlderThan time.Duration // only directories unchanged for this long
	// MinSize: only directories holding at least this many bytes.
	MinSize int64
	// IncludeUncheckable: paths of directories that are no git checkout
	// to plan for removal all the same.
	IncludeUncheckable []string
	// Confirmed: the apply follows with nothing asked between, so the
	// listing carries what it can of it (reclaimfused.go).
	Confirmed *ConfirmedApply
	Progress  func(string)
}

// ReclaimPlan lists every root of every host asked for and decides,
// touching nothing; with o.Confirmed, each listing also removes what it
// can prove alone, and those rows come back applied (reclaimfused.go).
// Rows are sorted by host, then path.
func (e *Executor) ReclaimPlan(ctx context.Context, o ReclaimOptions) ([]ReclaimRow, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	hosts, err := e.reclaimHosts(ctx, o.Host)
	if err != nil || len(hosts) == 0 {
		return []ReclaimRow{}, err // nothing to ask: nothing to name either
	}
	view, err := e.localView(ctx)
	if err != nil {
		return nil, err
	}
	// Every host's roots first: a failure here, before any listing, is
	// not one after a confirmed listing removed something.
	roots := make([][]string, len(hosts))
	for i, h := range hosts {
		if roots[i], err = e.rootsOf(ctx, h); err != nil {
			return nil, err
		}
	}
	rows := []ReclaimRow{}
	for i, h := range hosts {
		step := fmt.Sprintf("Listing %s on %s", joinRoots(roots[i]), h.Name)
		if o.Confirmed != nil {
			step += ", removing the old orphans it proves safe"
		}
		progress(step)
		got, err := e.listHost(ctx, h, roots[i], view, o)
		rows = append(rows, got...) // what the roots listed before a failure removed, too
		if err != nil {
			rows = append(rows, ReclaimRow{Host: h.Name, Action: ReclaimFailed, Err: err})
		}
	}
	includeUncheckable(rows, o.IncludeUncheckable)
	for i := range rows {
		if r := &rows[i]; r.Action == ReclaimRemove && r.Bytes < o.MinSize {
			r.Action, r.Reason = ReclaimKeep, ReasonTooSmall
			r.Detail = fmt.Sprintf("holds %d bytes, less than --min-size (%d)", r.Bytes, o.MinSize)
		}
	}
	return rows, nil
}

// includeUncheckable plans the rows kept only for being no checkout,
// and named, for removal.
func includeUncheckable(rows []ReclaimRow, paths []string) {
	for i := range rows {
		r := &rows[i]
		if r.Action == ReclaimKeep && r.Reason == string(reclaim.NotACheckout) && slices.Contains(paths, r.Path) {
			r.Action, r.Uncheckable = ReclaimRemove, true
			r.Detail = "not a git checkout, named with --include-uncheckable; it holds " + r.HoldsText()
		}
	}
}

// HoldsText says what a directory that is no checkout holds.
func (r ReclaimRow) HoldsText() string { return reclaim.HoldsText(r.Holds) }

// reclaimHosts is the one host named, or every host.
func (e *Executor) reclaimHosts(ctx context.Context, name string) ([]*records.Host, error) {
	if name != "" {
		h, _, err := e.getHost(ctx, name)
		if err != nil {
			return nil, err
		}
		return []*records.Host{h}, nil
	}
	hs, _, err := records.List[records.Host](ctx, e.cfg.Store, records.KindHost)
	return hs, err
}

// localView is this installation and the phase of every task it knows.
func (e *Executor) localView(ctx context.Context) (reclaim.LocalView, error) {
	inst, err := records.InstallationID(ctx, e.cfg.Store, newID("i"))
	if err != nil {
		return reclaim.LocalView{}, err
	}
	ts, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return reclaim.LocalView{}, err
	}
	v := reclaim.LocalView{InstallationID: inst, Phases: map[string]string{}, Upstreams: map[string][]reclaim.Upstream{}}
	for _, t := range ts {
		v.Phases[t.ID] = string(t.Phase)
		v.Upstreams[t.ID] = upstreamsOf(t)
	}
	return v, nil
}

// upstreamsOf is what the proof counts as pushed for t's checkouts: the
// repositories its last prepare was asked for, or, for a task recorded
// before those were, the primary's URL.
func upstreamsOf(t *records.Task) []reclaim.Upstream {
	var out []reclaim.Upstream
	for _, r := range t.Repositories {
		out = append(out, reclaim.Upstream{Path: r.Path, URL: r.URL})
	}
	if len(out) == 0 && t.Repo != "" {
		out = []reclaim.Upstream{{Path: ".", URL: t.Repo}}
	}
	return out
}

// rootsOf is every workdir root the host's directories may live under:
// its own, its profiles', and those its tasks were made under.
func (e *Executor) rootsOf(ctx context.Context, h *records.Host) ([]string, error) {
	set := map[string]bool{h.WorkdirRoot: true}
	ps, err := e.ListProfiles(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Profile.Host == h.Name && p.Profile.WorkdirRoot != "" {
			set[p.Profile.WorkdirRoot] = true
		}
	}
	ts, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.Host == h.Name && t.Root != "" {
			set[t.Root] = true
		}
	}
	roots := make([]string, 0, len(set))
	for r := range set {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	return roots, nil
}

// connectHelper connects to the host (quarantine does not block
// reclamation) and makes sure the helper is there, looked for under the
// host's own root.
func (e *Executor) connectHelper(ctx context.Context, h *records.Host) (*hostConn, error) {
	hc, err := e.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	if _, err := hc.helperAt(ctx, h.WorkdirRoot); err != nil {
		hc.Close()
		return nil, err
	}
	return hc, nil
}

// listHost lists each root once (two spellings of one physical root are
// one listing) and plans its entries, every root in one round trip where
// the helper is cached (listRoots). A root the helper refuses (not the
// login user's alone, say /tmp) is one failed row of its own: the other
// roots are still listed, and planned. Confirmed, the records are read
// again once connected, and the listing removes what it can by itself
// (reclaimfused.go): those rows come back applied, and, should the
// conversation end part way, with the error.
func (e *Executor) listHost(ctx context.Context, h *records.Host, roots []string, view reclaim.LocalView, o ReclaimOptions) ([]ReclaimRow, error) {
	hc, err := e.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	var apply *reclaim.ListApply
	var read time.Time
	if o.Confirmed != nil {
		// Stamped before the read begins: a task recorded while it ran
		// may be missing from it, so the records are this old.
		read = confirmedViewRead()
		if view, err = e.localView(ctx); err != nil {
			hc.Close()
			return nil, err
		}
		afterConfirmedView()
		apply = o.Confirmed.listApply(h.Name, view, o.OlderThan, o.MinSize)
	}
	cv, listings, err := hc.listRoots(ctx, roots, apply, read)
	rows := listedRows(h.Name, roots[:len(listings)], listings, view, o.OlderThan)
	if err != nil {
		hc.Close()
		return rows, err
	}
	switch {
	case slices.ContainsFunc(rows, func(r ReclaimRow) bool { return r.Action == ReclaimRemove }):
		e.kept.keep(hc, cv) // for the apply that may follow (reclaimconn.go)
	case apply != nil:
		// Applied, and nothing to follow: the answer is in hand, so the
		// helper's exit is not waited for (its input ends, it exits).
		cv.CloseInput()
		hc.Close()
	default:
		cv.Finish(probeTimeout)
		hc.Close()
	}
	return rows, nil
}

// listedRows plans each root's listing, with what it removed; a root
// listed twice (two spellings of one) is planned once.
func listedRows(host string, roots []string, listings []rootListing, view reclaim.LocalView, olderThan time.Duration) []ReclaimRow {
	var rows []ReclaimRow
	seen := map[string]bool{}
	for i, root := range roots {
		l := listings[i].listing
		if err := listings[i].err; err != nil {
			err = fmt.Errorf("listing %s on %s: %w", root, host, err)
			rows = append(rows, ReclaimRow{Host: host, Path: filepath.Join(root, "tasks"), Root: root, Action: ReclaimFailed, Err: err})
			continue
		}
		if !seen[l.Root] {
			seen[l.Root] = true
			for i, r := range reclaim.Plan(l, view, olderThan) {
				row := planRow(host, l.Root, r)
				row.Running = orphansOf(l.Entries[i], view)
				rows = append(rows, row)
			}
		}
		rows = withApplied(rows, host, l.Root, l.Applied) // a later listing's results are the newer
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	return rows
}

// planRow is a plan row as printed. A candidate whose marker names
// another task than its directory is kept: every directory kandev-exec
// makes is named after its task, so it was copied or renamed by hand.
func planRow(host, root string, r reclaim.Row) ReclaimRow {
	row := ReclaimRow{Host: host, Path: r.Path, TaskID: r.TaskID, Bytes: r.Bytes, AgeSeconds: r.AgeSeconds,
		Action: string(r.Action), Reason: string(r.Reason), Detail: r.Detail, Root: root, Dir: r.Dir, Identity: r.Identity, Holds: r.Holds}
	if r.Action == reclaim.Remove && !reclaim.NamedAfterItsTask(r) {
		row.Action, row.Reason = string(reclaim.Keep), string(reclaim.ForeignMarker)
		row.Detail = fmt.Sprintf("its marker names task %s, but the directory is %s: kandev-exec names every directory after its task", r.TaskID, r.Dir)
	}
	return row
}

func joinRoots(roots []string) string {
	out := ""
	for i, r := range roots {
		if i > 0 {
			out += ", "
		}
		out += filepath.Join(r, "tasks")
	}
	return out
}
