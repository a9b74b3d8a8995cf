package executor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/reclaim"
)

// helperMinAge keeps a helper version changed this recently: another
// kandev-exec (another version, on another machine) may have just put it
// in place to run it.
const helperMinAge = time.Hour

// HelperPruneRow is one helper version under one root of a host, or a
// root the host refused to look at (Err set, no SHA256).
type HelperPruneRow struct {
	Host   string `json:"host"`
	Root   string `json:"root"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	// Action: remove or keep with --dry-run; removed, skipped or failed
	// otherwise.
	Action string `json:"action"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	Err    error  `json:"-"`
}

// PruneHelpersOptions are `helper prune`'s inputs.
type PruneHelpersOptions struct {
	Host     string
	DryRun   bool
	Progress func(string)
}

// PruneHelpers removes, under every root of the host, the helper
// versions that nothing on the host runs, keeping the one this CLI uses
// there. The host proves each (reclaim.PruneHelpers); a root it refuses
// is a row of its own, and the others are still pruned.
func (e *Executor) PruneHelpers(ctx context.Context, o PruneHelpersOptions) ([]HelperPruneRow, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	h, _, err := e.getHost(ctx, o.Host)
	if err != nil {
		return nil, err
	}
	roots, err := e.rootsOf(ctx, h)
	if err != nil {
		return nil, err
	}
	hc, err := e.connectHelper(ctx, h)
	if err != nil {
		return nil, err
	}
	defer hc.Close()
	current, err := hc.helperAt(ctx, h.WorkdirRoot)
	if err != nil {
		return nil, err
	}
	rows := []HelperPruneRow{}
	seen := map[string]bool{}
	for _, root := range roots {
		progress(fmt.Sprintf("Looking at %s on %s", filepath.Join(root, "bin"), h.Name))
		req := reclaim.HelpersRequest{Root: root, Keep: []string{current.SHA256()}, MinAgeSeconds: int64(helperMinAge.Seconds()), DryRun: o.DryRun}
		var rep reclaim.HelpersReport
		if err := hc.call(ctx, h.WorkdirRoot, protocol.OpHelperPrune, req, &rep); err != nil {
			err = fmt.Errorf("helpers under %s on %s: %w", root, h.Name, err)
			if !errors.As(err, new(*remote.Error)) {
				return rows, err // the connection, not the root
			}
			rows = append(rows, HelperPruneRow{Host: h.Name, Root: root, Action: ReclaimFailed, Detail: err.Error(), Err: err})
			continue
		}
		if seen[rep.Root] {
			continue
		}
		seen[rep.Root] = true
		for _, v := range rep.Versions {
			rows = append(rows, HelperPruneRow{Host: h.Name, Root: rep.Root, SHA256: v.SHA256, Bytes: v.Bytes,
				Action: v.Action, Reason: string(v.Reason), Detail: v.Detail})
		}
	}
	return rows, nil
}
