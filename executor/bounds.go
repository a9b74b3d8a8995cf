package executor

import (
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
)

// launchBounds are the agent's max_runtime and idle_timeout: the profile's,
// with --max-runtime, which may only shorten the profile's.
func launchBounds(p *profiles.Profile, asked time.Duration) (maxRuntime, idle time.Duration, err error) {
	if maxRuntime, err = profiles.ParseBound(p.MaxRuntime); err != nil {
		return 0, 0, fmt.Errorf("profile %s: max_runtime %w; fix it with `kandev-exec profile apply`", p.Name, err)
	}
	if idle, err = profiles.ParseBound(p.IdleTimeout); err != nil {
		return 0, 0, fmt.Errorf("profile %s: idle_timeout %w; fix it with `kandev-exec profile apply`", p.Name, err)
	}
	switch {
	case asked < 0:
		return 0, 0, &UsageError{Msg: fmt.Sprintf("--max-runtime must be a positive duration, got %s", asked)}
	case asked == 0:
	case maxRuntime > 0 && asked > maxRuntime:
		return 0, 0, &UsageError{Msg: fmt.Sprintf("--max-runtime %s is longer than profile %s's max_runtime %s: it may only shorten it (drop the flag, or raise max_runtime in the profile)", asked, p.Name, maxRuntime)}
	default:
		maxRuntime = asked
	}
	return maxRuntime, idle, nil
}
