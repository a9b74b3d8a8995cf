package ssh

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Keepalive defaults: one probe every 15 s, and a link silent for 45 s is
// declared dead.
const (
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultKeepaliveDeadline = 45 * time.Second
)

// LostError is a connection the watchdog declared dead (exit code 7).
type LostError struct {
	Host   string
	Silent time.Duration
}

func (e *LostError) Error() string {
	return fmt.Sprintf("connection to %s lost: no reply to keepalives for %s (the remote side keeps running)", e.Host, e.Silent)
}

// Timeout makes a lost link classify as a timeout.
func (e *LostError) Timeout() bool { return true }

// Watchdog probes one client with keepalive@openssh.com. Any reply, even a
// refusal, proves the link alive. When the link stays silent past the
// deadline the client is closed, which unblocks every read and channel
// open on it; Err then says why.
type Watchdog struct {
	c        *Client
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	err      error
	interval time.Duration
	deadline time.Duration
}

// StartKeepalive starts the watchdog; Stop it when the connection's owner
// is done. Zero durations take the defaults.
func (c *Client) StartKeepalive(interval, deadline time.Duration) *Watchdog {
	if interval <= 0 {
		interval = DefaultKeepaliveInterval
	}
	if deadline <= 0 {
		deadline = DefaultKeepaliveDeadline
	}
	w := &Watchdog{c: c, stop: make(chan struct{}), done: make(chan struct{}), interval: interval, deadline: deadline}
	go w.loop()
	return w
}

func (w *Watchdog) loop() {
	defer close(w.done)
	replies := make(chan struct{}, 1)
	lastReply := time.Now()
	inflight := false
	tick := time.NewTicker(min(w.interval, w.deadline/3))
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-replies:
			inflight, lastReply = false, time.Now()
		case <-tick.C:
			if silent := time.Since(lastReply); silent >= w.deadline {
				w.mu.Lock()
				w.err = &LostError{Host: w.c.Target.Label(), Silent: silent.Round(time.Second)}
				w.mu.Unlock()
				w.c.Close()
				return
			}
			if !inflight && time.Since(lastReply) >= w.interval {
				inflight = true
				go func() {
					// SendRequest has no context; closing the client is
					// what unblocks it if the link is dead.
					if _, _, err := w.c.SendRequest("keepalive@openssh.com", true, nil); err == nil {
						select {
						case replies <- struct{}{}:
						default:
						}
					}
				}()
			}
		}
	}
}

// Err is the reason the watchdog closed the connection, or nil.
func (w *Watchdog) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watchdog and waits for it.
func (w *Watchdog) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// ErrClosed is a connection that ended without the watchdog's verdict:
// the peer or the network closed it.
var ErrClosed = errors.New("the connection closed")

// Check tells a failure of the link from a failure on it: it sends one
// keepalive and returns nil once the link answers, or why the link is
// gone (*LostError when silent past the deadline, else ErrClosed). It
// does not wait longer than the watchdog's deadline.
func (w *Watchdog) Check() error {
	reply := make(chan error, 1)
	go func() {
		_, _, err := w.c.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	select {
	case err := <-reply:
		if err == nil {
			return nil
		}
	case <-w.c.Done():
	case <-w.done:
		if w.Err() == nil {
			return nil // stopped by its owner: nothing known against the link
		}
	}
	if err := w.Err(); err != nil {
		return err
	}
	return ErrClosed
}
