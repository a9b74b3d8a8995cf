package cmdutil

import (
	"errors"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// A state the host may have changed says how old it is past a minute; an
// ended one never does; one a refresh could not ask is marked.
func TestSessionStateAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ago time.Duration) *time.Time { x := now.Add(-ago); return &x }
	for _, tc := range []struct {
		s      records.Session
		failed bool
		want   string
	}{
		{records.Session{State: records.SessionRunning, StartedAt: now.Add(-59 * time.Second)}, false, "running"},
		{records.Session{State: records.SessionRunning, StartedAt: now.Add(-time.Hour), CheckedAt: at(5 * time.Minute)}, false, "running (recorded 5m ago)"},
		{records.Session{State: records.SessionRunning, StartedAt: now.Add(-time.Hour), CheckedAt: at(10 * time.Second)}, false, "running"},
		{records.Session{State: records.SessionLost, StartedAt: now.Add(-time.Hour), EndedAt: at(3 * time.Hour)}, false, "lost (recorded 3h ago)"},
		{records.Session{State: records.SessionExited, StartedAt: now.Add(-48 * time.Hour), EndedAt: at(47 * time.Hour)}, false, "exited"},
		{records.Session{State: records.SessionRunning, StartedAt: now.Add(-2 * time.Minute)}, true, "running (recorded 2m ago, not refreshed)"},
		{records.Session{State: records.SessionRunning, StartedAt: now}, true, "running (not refreshed)"},
	} {
		v := executor.ViewOf(&tc.s)
		if tc.failed {
			v.RefreshErr = errors.New("unreachable")
		}
		if got := SessionState(&v, now); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}
