package ssh

import (
	"context"
	"sync"
	"time"
)

// hopDeadline bounds one hop's connect and handshake, and stands still
// while a passphrase is asked for: the time a person takes to type it is
// not the server's.
type hopDeadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	left   time.Duration
	since  time.Time
	paused int
}

// withHopDeadline is ctx cancelled once d has run, not counting pauses.
func withHopDeadline(ctx context.Context, d time.Duration) (context.Context, *hopDeadline, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	h := &hopDeadline{left: d, since: time.Now()}
	h.timer = time.AfterFunc(d, cancel)
	return ctx, h, func() { h.timer.Stop(); cancel() }
}

// pause stops the clock until the matching resume.
func (h *hopDeadline) pause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused++; h.paused == 1 && h.timer.Stop() {
		h.left -= time.Since(h.since)
	}
}

func (h *hopDeadline) resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused--; h.paused == 0 {
		h.since = time.Now()
		h.timer.Reset(h.left)
	}
}
