package executor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
)

// --max-runtime may shorten the profile's max_runtime, never lengthen it.
func TestLaunchBounds(t *testing.T) {
	bounded := &profiles.Profile{Name: "p", MaxRuntime: "1h", IdleTimeout: "5m"}
	open := &profiles.Profile{Name: "q"}
	for _, tc := range []struct {
		p         *profiles.Profile
		asked     time.Duration
		max, idle time.Duration
		err       string
	}{
		{bounded, 0, time.Hour, 5 * time.Minute, ""},
		{bounded, 10 * time.Minute, 10 * time.Minute, 5 * time.Minute, ""},
		{bounded, time.Hour, time.Hour, 5 * time.Minute, ""},
		{bounded, 2 * time.Hour, 0, 0, "--max-runtime 2h0m0s is longer than profile p's max_runtime 1h0m0s: it may only shorten it"},
		{open, 3 * time.Hour, 3 * time.Hour, 0, ""},
		{open, 0, 0, 0, ""},
		{open, -time.Second, 0, 0, "--max-runtime must be a positive duration"},
	} {
		max, idle, err := launchBounds(tc.p, tc.asked)
		var ue *UsageError
		switch {
		case tc.err != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s --max-runtime %s: %v, want a usage error %q", tc.p.Name, tc.asked, err, tc.err)
		case tc.err == "" && (err != nil || max != tc.max || idle != tc.idle):
			t.Errorf("%s --max-runtime %s: %s %s %v, want %s %s", tc.p.Name, tc.asked, max, idle, err, tc.max, tc.idle)
		}
	}
}
