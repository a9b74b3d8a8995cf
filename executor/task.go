package executor

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/state"
)

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

// AmbiguousError: an ID prefix matches several records (exit 2).
type AmbiguousError struct {
	What, Prefix string
	Matches      []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s ID prefix %q is ambiguous: %s", e.What, e.Prefix, strings.Join(e.Matches, ", "))
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

// GetTask resolves an ID prefix and reads the task.
func (e *Executor) GetTask(ctx context.Context, idPrefix string) (*records.Task, state.Record, error) {
	id, err := e.resolveID(ctx, records.KindTask, idPrefix)
	if err != nil {
		return nil, state.Record{}, err
	}
	return getRecord[records.Task](ctx, e.cfg.Store, records.KindTask, id)
}

// GetSession resolves an ID prefix and reads the session.
func (e *Executor) GetSession(ctx context.Context, idPrefix string) (*records.Session, state.Record, error) {
	id, err := e.resolveID(ctx, records.KindSession, idPrefix)
	if err != nil {
		return nil, state.Record{}, err
	}
	return getRecord[records.Session](ctx, e.cfg.Store, records.KindSession, id)
}

// ListTasks returns tasks, newest first, optionally on one host.
func (e *Executor) ListTasks(ctx context.Context, host string) ([]*records.Task, error) {
	ts, _, err := listRecords[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return nil, err
	}
	out := make([]*records.Task, 0, len(ts))
	for _, t := range ts {
		if host == "" || t.Host == host {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// ListSessions returns sessions, newest first, optionally of one task.
func (e *Executor) ListSessions(ctx context.Context, taskPrefix string) ([]*records.Session, error) {
	taskID := ""
	if taskPrefix != "" {
		t, _, err := e.GetTask(ctx, taskPrefix)
		if err != nil {
			return nil, err
		}
		taskID = t.ID
	}
	ss, _, err := listRecords[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return nil, err
	}
	out := make([]*records.Session, 0, len(ss))
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
	return e.recordNames(ctx, records.KindTask)
}
func (e *Executor) SessionIDs(ctx context.Context) ([]string, error) {
	return e.recordNames(ctx, records.KindSession)
}
