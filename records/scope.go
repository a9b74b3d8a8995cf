package records

import (
	"context"
	"encoding/json"

	"github.com/kdlbs/kandev-exec/state"
)

// Scope narrows the journal, and the view, to one host or one task and
// what concerns it (`watch --host`, `--task`); the zero Scope keeps
// everything.
type Scope struct {
	Host string
	Task string
}

// Covers reports whether what is about host and task is in the scope.
func (s Scope) Covers(host, task string) bool {
	return (s.Host == "" || host == s.Host) && (s.Task == "" || task == s.Task)
}

// About is who an entry is about: its host and task, from its detail,
// else from the record it names (a host entry is about that host, a task
// entry about that task). Entries written without a detail still say
// their kind and name.
func About(e state.Entry, d Detail) (host, task string) {
	host, task = d.Host, d.TaskID
	switch e.Kind {
	case KindHost:
		if host == "" {
			host = e.Name
		}
	case KindTask, KindJob:
		if task == "" {
			task = e.Name
		}
	}
	return host, task
}

// Getter reads one record.
type Getter interface {
	Get(ctx context.Context, kind state.Kind, name string) (state.Record, error)
}

// Placer decides which entries a scope keeps when the entries alone do
// not say: one written without its host or task (an older entry, a
// session's) is placed by the record it names, read once.
type Placer struct {
	st     Getter
	placed map[string][2]string // kind/name -> host, task
}

// NewPlacer places entries by the records of st.
func NewPlacer(st Getter) *Placer { return &Placer{st: st, placed: map[string][2]string{}} }

// Keeps reports whether sc keeps e, whose detail is d: by About, and by
// the record e names where About leaves out what sc asks about.
func (p *Placer) Keeps(ctx context.Context, sc Scope, e state.Entry, d Detail) bool {
	if sc == (Scope{}) {
		return true
	}
	host, task := About(e, d)
	if (sc.Host != "" && host == "") || (sc.Task != "" && task == "") {
		h, t := p.place(ctx, e)
		host, task = or(host, h), or(task, t)
	}
	return sc.Covers(host, task)
}

func (p *Placer) place(ctx context.Context, e state.Entry) (host, task string) {
	key := string(e.Kind) + "/" + e.Name
	if pl, ok := p.placed[key]; ok {
		return pl[0], pl[1]
	}
	rec, err := p.st.Get(ctx, e.Kind, e.Name)
	if err == nil {
		var v struct {
			Host   string `json:"host"`
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(rec.Data, &v) == nil {
			host, task = v.Host, v.TaskID
		}
	}
	if e.Kind == KindTask {
		task = e.Name
	}
	p.placed[key] = [2]string{host, task}
	return host, task
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
