package controller

import "time"

// idlePoll is how often the agent's last output is looked at against
// idle_timeout, at most.
const idlePoll = time.Second

// enforceBounds stops the agent at max_runtime, or once it has written
// nothing for idle_timeout, whoever is connected: the controller alone
// enforces them, on the host.
func (s *server) enforceBounds() {
	if s.maxRuntime <= 0 && s.idle <= 0 {
		return
	}
	var deadline <-chan time.Time
	if s.maxRuntime > 0 {
		t := time.NewTimer(s.maxRuntime)
		defer t.Stop()
		deadline = t.C
	}
	var tick <-chan time.Time
	if s.idle > 0 {
		t := time.NewTicker(min(idlePoll, s.idle/2))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.exited:
			return
		case <-deadline:
			s.boundStop(StopMaxRuntime, "max_runtime "+s.maxRuntime.String()+" reached")
			return
		case <-tick:
			quiet := time.Since(time.Unix(0, s.lastOutput.Load()))
			if quiet >= s.idle {
				s.boundStop(StopIdleTimeout, "no output for idle_timeout "+s.idle.String())
				return
			}
		}
	}
}

// boundStop records why the agent is stopped, then stops it as
// `session stop` does. A stop already under way keeps its own reason.
func (s *server) boundStop(reason, why string) {
	s.mu.Lock()
	first := !s.stopping
	if first {
		s.st.StopReason = reason
		_ = s.writeStatusLocked()
	}
	s.mu.Unlock()
	if first {
		s.event("%s: stopping the agent", why)
	}
	s.stop(s.grace)
}
