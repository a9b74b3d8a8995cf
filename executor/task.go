package executor

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// Store kinds of the launch side.
const (
	KindTask    state.Kind = "task"
	KindSession state.Kind = "session"
)

// Task phases (docs/architecture.md, "Lifecycle of a task environment").
const (
	PhaseAllocating     = "allocating"
	PhasePreparing      = "preparing"
	PhaseReady          = "ready"
	PhaseDraining       = "draining"
	PhaseDestroying     = "destroying"
	PhaseCleanupPending = "cleanup_pending"
	PhaseAbsent         = "absent"
)

// Session states.
const (
	SessionStarting = "starting"
	SessionRunning  = "running"
	SessionExited   = "exited"
	SessionStopped  = "stopped"
	SessionLost     = "lost"
	SessionFailed   = "failed" // never started: the launch failed before the controller ran
)

// Task is one task environment: a directory on a host and its sessions.
type Task struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Profile     string    `json:"profile"`
	Agent       string    `json:"agent"`
	Host        string    `json:"host"`
	Root        string    `json:"workdir_root"`
	DirName     string    `json:"task_dir_name"`
	TaskDir     string    `json:"task_dir"` // absolute on the host, known once prepared
	Repo        string    `json:"repo"`
	Branch      string    `json:"branch"`
	BaseBranch  string    `json:"base_branch"`
	Command     string    `json:"command"`    // what resume runs by default
	LaunchEnv   []string  `json:"launch_env"` // --env K=V literals, replayed on resume
	Phase       string    `json:"phase"`
	OperationID string    `json:"operation_id"`
	Error       string    `json:"error"`
	CreatedAt   time.Time `json:"created_at"`
	Sessions    []string  `json:"sessions"`
	// Launcher is the process that created the task: an interrupted
	// launch is told from a running one by it.
	Launcher *state.Holder `json:"launcher,omitempty"`
}

// Session is one controller run in a task directory.
type Session struct {
	ID          string     `json:"id"`
	TaskID      string     `json:"task_id"`
	Host        string     `json:"host"`
	State       string     `json:"state"`
	ExitCode    *int       `json:"exit_code"`
	Signal      string     `json:"signal,omitempty"` // what ended the agent when no exit code did
	PID         int        `json:"pid"`
	StartTime   uint64     `json:"pid_start_time"`
	RemotePort  int        `json:"remote_port"`
	SessionDir  string     `json:"session_dir"`
	Command     string     `json:"command"`
	OperationID string     `json:"operation_id"`
	Error       string     `json:"error"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at"`
	// LogLostBytes is output the host could not write to the session's
	// log (a full disk), as its controller last reported.
	LogLostBytes int64 `json:"log_lost_bytes,omitempty"`
	// Launcher is the process starting the session; a session still
	// starting after it died was interrupted.
	Launcher *state.Holder `json:"launcher,omitempty"`
	// ControllerStartAt is when the launch asked the host to start the
	// controller: without it, none can be running.
	ControllerStartAt *time.Time `json:"controller_start_at,omitempty"`
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID is prefix + 12 random base32 characters: short to type, valid as
// a task directory segment, and unique without coordination.
func newID(prefix string) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + idEncoding.EncodeToString(b)[:12]
}

// AmbiguousError: an ID prefix, or a task name, matches several records
// (exit 2); Matches are their IDs.
type AmbiguousError struct {
	What, Prefix string
	Matches      []string
	ByName       bool // Prefix is a task name several tasks have
}

func (e *AmbiguousError) Error() string {
	if e.ByName {
		return fmt.Sprintf("%s name %q is ambiguous: %s", e.What, e.Prefix, strings.Join(e.Matches, ", "))
	}
	return fmt.Sprintf("%s ID prefix %q is ambiguous: %s", e.What, e.Prefix, strings.Join(e.Matches, ", "))
}

func (e *AmbiguousError) Hint() string {
	if e.ByName {
		return "name the " + e.What + " by its ID, one of those above"
	}
	return "give more characters of the ID"
}

// resolveID finds the one record of kind whose name starts with prefix.
func (e *Executor) resolveID(ctx context.Context, kind state.Kind, prefix string) (string, error) {
	if err := checkName(kind, prefix); err != nil {
		return "", err
	}
	if _, err := e.cfg.Store.Get(ctx, kind, prefix); err == nil {
		return prefix, nil
	} else if !errors.Is(err, state.ErrNotFound) {
		return "", err
	}
	names, err := e.recordNames(ctx, kind)
	if err != nil {
		return "", err
	}
	var hits []string
	for _, n := range names {
		if prefix != "" && strings.HasPrefix(n, prefix) {
			hits = append(hits, n)
		}
	}
	sort.Strings(hits)
	switch len(hits) {
	case 0:
		return "", &NotFoundError{What: string(kind), Name: prefix, ListCmd: string(kind) + " ls"}
	case 1:
		return hits[0], nil
	}
	return "", &AmbiguousError{What: string(kind), Prefix: prefix, Matches: hits}
}

// GetTask reads the task ref names: its ID, else its name when exactly
// one task has that name, else a unique ID prefix.
func (e *Executor) GetTask(ctx context.Context, ref string) (*Task, state.Record, error) {
	id, err := e.resolveTask(ctx, ref)
	if err != nil {
		return nil, state.Record{}, err
	}
	return getRecord[Task](ctx, e.cfg.Store, KindTask, id)
}

// resolveTask is resolveID for tasks, with names between an exact ID and
// an ID prefix: a name is what the user chose to type. Names are read
// from each record alone, so one unreadable task does not hide the others.
func (e *Executor) resolveTask(ctx context.Context, ref string) (string, error) {
	if checkName(KindTask, ref) == nil {
		if _, err := e.cfg.Store.Get(ctx, KindTask, ref); err == nil {
			return ref, nil
		} else if !errors.Is(err, state.ErrNotFound) {
			return "", err
		}
	}
	recs, err := e.cfg.Store.List(ctx, KindTask)
	if err != nil {
		return "", withRemedy(err)
	}
	var named []string
	for _, r := range recs {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r.Data, &t) == nil && t.Name == ref {
			named = append(named, r.Name)
		}
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(named) > 1:
		return "", &AmbiguousError{What: string(KindTask), Prefix: ref, Matches: named, ByName: true}
	case checkName(KindTask, ref) != nil:
		return "", &NotFoundError{What: string(KindTask), Name: ref, ListCmd: "task ls"}
	}
	return e.resolveID(ctx, KindTask, ref)
}

// GetSession resolves an ID prefix and reads the session.
func (e *Executor) GetSession(ctx context.Context, idPrefix string) (*Session, state.Record, error) {
	id, err := e.resolveID(ctx, KindSession, idPrefix)
	if err != nil {
		return nil, state.Record{}, err
	}
	return getRecord[Session](ctx, e.cfg.Store, KindSession, id)
}

// ListTasks returns tasks, newest first, optionally on one host.
func (e *Executor) ListTasks(ctx context.Context, host string) ([]*Task, error) {
	ts, _, err := listRecords[Task](ctx, e.cfg.Store, KindTask)
	if err != nil {
		return nil, err
	}
	out := make([]*Task, 0, len(ts))
	for _, t := range ts {
		if host == "" || t.Host == host {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// ListSessions returns sessions, newest first, optionally of one task.
func (e *Executor) ListSessions(ctx context.Context, taskPrefix string) ([]*Session, error) {
	taskID := ""
	if taskPrefix != "" {
		t, _, err := e.GetTask(ctx, taskPrefix)
		if err != nil {
			return nil, err
		}
		taskID = t.ID
	}
	ss, _, err := listRecords[Session](ctx, e.cfg.Store, KindSession)
	if err != nil {
		return nil, err
	}
	out := make([]*Session, 0, len(ss))
	for _, s := range ss {
		if taskID == "" || s.TaskID == taskID {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, nil
}

// TaskIDs and SessionIDs serve shell completion from local state.
func (e *Executor) TaskIDs(ctx context.Context) ([]string, error) {
	return e.recordNames(ctx, KindTask)
}
func (e *Executor) SessionIDs(ctx context.Context) ([]string, error) {
	return e.recordNames(ctx, KindSession)
}
