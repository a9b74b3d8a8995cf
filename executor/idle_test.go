package executor

import (
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// A task is idle from the last of its creation, its last exec or shell,
// and its sessions' starts and ends; never while a session has not ended.
func TestIdleSince(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2030, 1, 1, h, 0, 0, 0, time.UTC) }
	ended := func(start, end int) *records.Session {
		e := at(end)
		return &records.Session{State: records.SessionExited, StartedAt: at(start), EndedAt: &e}
	}
	touched := at(5)
	task := &records.Task{CreatedAt: at(1)}
	for _, c := range []struct {
		name    string
		touched *time.Time
		ss      []*records.Session
		want    time.Time
		idle    bool
	}{
		{"no sessions", nil, nil, at(1), true},
		{"the last session's end", nil, []*records.Session{ended(2, 3), ended(2, 4)}, at(4), true},
		{"an exec after it", &touched, []*records.Session{ended(2, 3)}, at(5), true},
		{"a session running", nil, []*records.Session{ended(2, 3), {State: records.SessionRunning, StartedAt: at(3)}}, time.Time{}, false},
	} {
		task.TouchedAt = c.touched
		got, idle := idleSince(task, c.ss)
		if !got.Equal(c.want) || idle != c.idle {
			t.Errorf("%s: idle since %v (%v), want %v (%v)", c.name, got, idle, c.want, c.idle)
		}
	}
}
