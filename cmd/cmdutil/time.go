package cmdutil

import (
	"fmt"
	"time"
)

// One time style: people read ages ("3m ago") in tables and human
// output; --json carries RFC 3339 UTC to the second. Every command formats
// times through these, so the two never mix.

// Ago is t as an age for a table cell: "just now", "42s ago", "3m ago",
// "5h ago", "12d ago", "2y ago"; "-" for the zero time. A time ahead of
// the clock (another machine's) reads "in 3m".
func Ago(t time.Time) string { return AgoFrom(t, time.Now()) }

// AgoFrom is Ago measured from now (tests).
func AgoFrom(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 365*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		s = fmt.Sprintf("%dy", int(d/(365*24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// Timestamp is t as --json carries it, for the few human outputs that
// must show the instant itself (a YAML comment `apply` reads back).
func Timestamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// parseTimestamp reads a time as --json carries it (Timestamp's form),
// for --template's time functions.
func parseTimestamp(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) }
