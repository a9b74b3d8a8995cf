package controller

import "time"

// A status write that fails (a full disk) is retried with backoff, from
// statusRetryFirst up to statusRetryMax between attempts, for as long as
// the controller runs; as it exits, for about exitRetryFor more, so that
// a stop's deadline is not overrun.
const (
	statusRetryFirst = 100 * time.Millisecond
	statusRetryMax   = 5 * time.Second
	exitRetryFor     = 3 * time.Second
)

// retryStatus rewrites status.json until a write succeeds (this one or
// any other) or the controller is done.
func (s *server) retryStatus(first error) {
	s.event("writing %s failed: %v; retrying", statusFile, first)
	for wait := statusRetryFirst; ; wait = min(2*wait, statusRetryMax) {
		select {
		case <-s.done:
			s.mu.Lock()
			s.retrying = false
			s.mu.Unlock()
			return
		case <-time.After(wait):
		}
		s.mu.Lock()
		var err error
		if s.statusDirty {
			err = s.storeStatusLocked()
		}
		s.retrying = err != nil
		s.mu.Unlock()
		if err == nil {
			s.event("%s written", statusFile)
			return
		}
	}
}

// saveStatusAtExit makes the last, bounded attempts at a status write that
// is still failing as the controller exits.
func (s *server) saveStatusAtExit() {
	var waited time.Duration
	for wait := statusRetryFirst; ; wait *= 2 {
		s.mu.Lock()
		var err error
		if s.statusDirty {
			err = s.storeStatusLocked()
		}
		s.mu.Unlock()
		if err == nil {
			return
		}
		if waited >= exitRetryFor {
			s.event("giving up on %s: %v; it may not show how the agent ended", statusFile, err)
			return
		}
		time.Sleep(wait)
		waited += wait
	}
}
