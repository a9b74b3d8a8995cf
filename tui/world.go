package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// world is what the view knows of the store: the records it shows, by
// ID, plus the per-host counts the hosts pane needs, kept up to date on
// every change so that no frame walks every session.
//
// A world is built by a load in a command's goroutine and then owned by
// Update alone: nothing else reads or writes it afterwards.
type world struct {
	hosts    map[string]*records.Host
	tasks    map[string]*records.Task
	sessions map[string]*records.Session
	jobs     map[string]*records.CleanupJob
	// running counts sessions starting or running per host; pending
	// counts tasks in cleanup_pending per host.
	running map[string]int
	pending map[string]int
	// hostOrder and envOrder are every host name and task ID in display
	// order; nil when a change of membership made them stale.
	hostOrder []string
	envOrder  []string
}

func newWorld() *world {
	return &world{hosts: map[string]*records.Host{}, tasks: map[string]*records.Task{},
		sessions: map[string]*records.Session{}, jobs: map[string]*records.CleanupJob{},
		running: map[string]int{}, pending: map[string]int{}}
}

// watchedKinds are the kinds whose records the view shows; events of
// other kinds (profiles, secrets) appear in the events pane only.
var watchedKinds = []state.Kind{records.KindHost, records.KindTask, records.KindSession, records.KindJob}

func watched(k state.Kind) bool { return slices.Contains(watchedKinds, k) }

// decode reads one record of a watched kind.
func decode(kind state.Kind, data []byte) (any, error) {
	var v any
	switch kind {
	case records.KindHost:
		v = new(records.Host)
	case records.KindTask:
		v = new(records.Task)
	case records.KindSession:
		v = new(records.Session)
	case records.KindJob:
		v = new(records.CleanupJob)
	default:
		return nil, fmt.Errorf("kind %s is not shown", kind)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// affected names the rows a change touches, so only their filter text is
// recomputed.
type affected struct {
	hosts, envs map[string]bool
	order       bool // a row appeared or went: the display order is stale
}

func newAffected() *affected {
	return &affected{hosts: map[string]bool{}, envs: map[string]bool{}}
}

// set stores v (a decoded record) under kind/name, or removes the record
// when v is nil, adjusting the counts and noting the rows it touches.
func (w *world) set(kind state.Kind, name string, v any, a *affected) {
	switch kind {
	case records.KindHost:
		h, _ := v.(*records.Host)
		if _, had := w.hosts[name]; had != (h != nil) {
			a.order = true
		}
		if h == nil {
			delete(w.hosts, name)
		} else {
			w.hosts[name] = h
		}
		a.hosts[name] = true
	case records.KindTask:
		t, _ := v.(*records.Task)
		old, had := w.tasks[name]
		if had != (t != nil) {
			a.order = true
		}
		if had {
			if old.Phase == records.PhaseCleanupPending {
				w.pending[old.Host]--
			}
			a.hosts[old.Host] = true
		}
		if t == nil {
			delete(w.tasks, name)
		} else {
			if had && (old.Host != t.Host || !old.CreatedAt.Equal(t.CreatedAt)) {
				a.order = true
			}
			w.tasks[name] = t
			if t.Phase == records.PhaseCleanupPending {
				w.pending[t.Host]++
			}
			a.hosts[t.Host] = true
		}
		a.envs[name] = true
	case records.KindSession:
		s, _ := v.(*records.Session)
		if old, had := w.sessions[name]; had {
			if live(old) {
				w.running[old.Host]--
			}
			a.hosts[old.Host] = true
		}
		if s == nil {
			delete(w.sessions, name)
		} else {
			w.sessions[name] = s
			if live(s) {
				w.running[s.Host]++
			}
			a.hosts[s.Host] = true
		}
	case records.KindJob:
		j, _ := v.(*records.CleanupJob)
		if old, had := w.jobs[name]; had {
			a.envs[old.TaskID] = true
		}
		if j == nil {
			delete(w.jobs, name)
		} else {
			w.jobs[name] = j
			a.envs[j.TaskID] = true
		}
	}
}

// live sessions are the ones a drain has to stop.
func live(s *records.Session) bool {
	return s.State == records.SessionStarting || s.State == records.SessionRunning
}

// job is the cleanup job of a task (named by the task's ID).
func (w *world) job(taskID string) *records.CleanupJob { return w.jobs[taskID] }

// order sorts hosts by name and environments by host, then age, then ID:
// a row keeps its place while its phase changes under the operator's eyes.
func (w *world) order() {
	if w.hostOrder == nil {
		w.hostOrder = make([]string, 0, len(w.hosts))
		for n := range w.hosts {
			w.hostOrder = append(w.hostOrder, n)
		}
		slices.Sort(w.hostOrder)
	}
	if w.envOrder == nil {
		w.envOrder = make([]string, 0, len(w.tasks))
		for id := range w.tasks {
			w.envOrder = append(w.envOrder, id)
		}
		slices.SortFunc(w.envOrder, func(a, b string) int {
			ta, tb := w.tasks[a], w.tasks[b]
			if c := strings.Compare(ta.Host, tb.Host); c != 0 {
				return c
			}
			if c := ta.CreatedAt.Compare(tb.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	}
}
