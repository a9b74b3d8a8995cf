package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// An orphaned agent is a session controller still running in a task
// directory made by this installation whose task no local record holds
// (state lost, a record removed): it works for nobody. A plan lists each
// on its directory's row; --apply stops it only once the host proves it
// again (its pid at the start time listed, its argv naming the session
// directory, the directory's marker still this installation's and its
// task still unknown here), then decides about the directory as planned.

// OrphanAgent is one orphaned session controller on a reclaim row.
type OrphanAgent struct {
	Session    string `json:"session"`
	PID        int    `json:"pid"`
	StartTime  uint64 `json:"start_time"`
	AgeSeconds int64  `json:"age_seconds"`
	Command    string `json:"command"`
	// Stopped: --apply stopped it. Left says why --apply left it alone.
	Stopped bool   `json:"stopped,omitempty"`
	Left    string `json:"left,omitempty"`
}

// orphansOf are the controllers running in e, when its marker is this
// installation's and its task unknown here.
func orphansOf(e reclaim.Entry, v reclaim.LocalView) []OrphanAgent {
	if !orphanDir(e, v) {
		return nil
	}
	var out []OrphanAgent
	for _, r := range e.Running {
		o := OrphanAgent{Session: r.Session, PID: r.PID, StartTime: r.StartTime, Command: r.Command}
		if !r.StartedAt.IsZero() {
			o.AgeSeconds = int64(time.Since(r.StartedAt) / time.Second)
		}
		out = append(out, o)
	}
	return out
}

func orphanDir(e reclaim.Entry, v reclaim.LocalView) bool {
	if e.Marker == nil || e.Marker.InstallationID != v.InstallationID || e.Marker.TaskID == "" {
		return false
	}
	_, known := v.Phases[e.Marker.TaskID]
	return !known
}

// stopOrphans stops, on one connection to host, the orphans listed on
// rows idx, each proven again first; each orphan says what became of it.
func (e *Executor) stopOrphans(ctx context.Context, host string, rows []ReclaimRow, idx []int, v reclaim.LocalView) {
	leave := func(why string) {
		for _, i := range idx {
			for j := range rows[i].Running {
				rows[i].Running[j].Left = why
			}
		}
	}
	h, _, err := e.getHost(ctx, host)
	if err != nil {
		leave(err.Error())
		return
	}
	hc, err := e.connectHelper(ctx, h)
	if err != nil {
		leave(err.Error())
		return
	}
	defer hc.Close()
	listings := map[string]map[string]reclaim.Entry{} // root -> dir -> entry, as the host shows it now
	for _, i := range idx {
		r := &rows[i]
		if listings[r.Root] == nil {
			var l reclaim.Listing
			if err := hc.call(ctx, h.WorkdirRoot, protocol.OpReclaimList, reclaim.ListRequest{Root: r.Root}, &l); err != nil {
				leave(fmt.Sprintf("listing %s again: %v", r.Root, err))
				return
			}
			listings[r.Root] = map[string]reclaim.Entry{}
			for _, en := range l.Entries {
				listings[r.Root][en.Dir] = en
			}
		}
		now, seen := listings[r.Root][r.Dir]
		for j := range r.Running {
			o := &r.Running[j]
			switch {
			case !seen || !orphanDir(now, v):
				o.Left = "its directory no longer shows this installation's marker for a task unknown here"
			case !stillRunning(now.Running, *o):
				o.Left = fmt.Sprintf("pid %d no longer runs as this session's controller, started at the time listed", o.PID)
			default:
				e.stopOrphan(ctx, hc, h.WorkdirRoot, filepath.Join(r.Root, "tasks", r.Dir), o)
			}
		}
	}
}

func stillRunning(now []controller.Running, o OrphanAgent) bool {
	for _, r := range now {
		if r.Session == o.Session && r.PID == o.PID && r.StartTime == o.StartTime {
			return true
		}
	}
	return false
}

// stopOrphan stops o as `session stop` stops a controller that cannot be
// asked: the host signals it only if it proves to be the session
// directory's controller at o's start time.
func (e *Executor) stopOrphan(ctx context.Context, hc *hostConn, helperRoot, taskDir string, o *OrphanAgent) {
	dir := filepath.Join(taskdir.SessionsPath(taskDir), o.Session)
	var id controller.Identity
	err := hc.call(ctx, helperRoot, protocol.OpControllerKill, protocol.SessionRequest{SessionDir: dir, StartTime: o.StartTime}, &id)
	switch {
	case err != nil:
		o.Left = err.Error()
	case id.Alive && id.Ours:
		o.Left = fmt.Sprintf("pid %d did not stop", o.PID)
	default:
		o.Stopped = true
	}
}

// stopAllOrphans stops the orphans listed on rows, host by host.
func (e *Executor) stopAllOrphans(ctx context.Context, rows []ReclaimRow, v reclaim.LocalView, progress func(string)) {
	byHost := map[string][]int{}
	var order []string
	for i := range rows {
		if len(rows[i].Running) == 0 || rows[i].Action == ReclaimFailed {
			continue
		}
		rows[i].Running = slices.Clone(rows[i].Running)
		if _, ok := byHost[rows[i].Host]; !ok {
			order = append(order, rows[i].Host)
		}
		byHost[rows[i].Host] = append(byHost[rows[i].Host], i)
	}
	for _, host := range order {
		progress(fmt.Sprintf("Stopping orphaned agents on %s", host))
		e.stopOrphans(ctx, host, rows, byHost[host], v)
	}
}
