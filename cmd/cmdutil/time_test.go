package cmdutil

import (
	"testing"
	"time"
)

func TestAgoFrom(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "-"},
		{now, "just now"},
		{now.Add(-999 * time.Millisecond), "just now"},
		{now.Add(-42 * time.Second), "42s ago"},
		{now.Add(-3*time.Minute - 59*time.Second), "3m ago"},
		{now.Add(-5 * time.Hour), "5h ago"},
		{now.Add(-47 * time.Hour), "47h ago"},
		{now.Add(-72 * time.Hour), "3d ago"},
		{now.Add(-800 * 24 * time.Hour), "2y ago"},
		{now.Add(3 * time.Minute), "in 3m"},
		{now.In(time.FixedZone("X", 5*3600)).Add(-time.Minute), "1m ago"}, // zones do not matter
	} {
		if got := AgoFrom(tc.t, now); got != tc.want {
			t.Errorf("AgoFrom(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestTimestamp(t *testing.T) {
	at := time.Date(2026, 3, 4, 13, 5, 6, 789_000_000, time.FixedZone("X", 3600))
	if got := Timestamp(at); got != "2026-03-04T12:05:06Z" {
		t.Fatalf("Timestamp = %q", got)
	}
}
