package ssh

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// Some servers allow fewer session channels per connection than a
// command opens over its life (MaxSessions 1, tinysshd's one), and sshd
// frees a closed session's slot a moment after the client sees it close.
// A refused session open is therefore waited out: until another session
// of this connection closes, or, with none open, a few short retries.

// slotWait bounds the wait for a session of this connection to close.
const slotWait = time.Minute

// slotRetries and slotBackoff pace the retries with no session open.
const (
	slotRetries = 8
	slotBackoff = 25 * time.Millisecond
)

// sessionSlots counts the session channels open on a connection.
type sessionSlots struct {
	mu    sync.Mutex
	open  int
	freed chan struct{} // closed, and replaced, whenever one closes
	short func()        // OnSessionShortage's
}

// OnSessionShortage sets what is asked to close sessions held idle (kept
// for reuse) when the server refuses another one.
func (c *Client) OnSessionShortage(f func()) {
	c.slots.mu.Lock()
	c.slots.short = f
	c.slots.mu.Unlock()
}

// SessionLimitError: the server kept refusing a session channel while
// this connection's others stayed open.
type SessionLimitError struct {
	Host string
	Open int // session channels this connection held meanwhile
	Err  error
}

func (e *SessionLimitError) Error() string {
	return fmt.Sprintf("%s: the SSH server refuses another session channel on this connection (%d open, held for %s): %v", e.Host, e.Open, slotWait, e.Err)
}

func (e *SessionLimitError) Unwrap() error { return e.Err }

// Hint names the server setting.
func (e *SessionLimitError) Hint() string {
	return "the server allows few session channels per connection (OpenSSH's MaxSessions): raise it to 10 or more, or retry once other kandev-exec commands to this host end"
}

// Session runs open, which opens one session channel (directly, or
// through another library: an SFTP client), counting it open until
// release is called once that channel is closed. A refused open is tried
// again as said above.
func (c *Client) Session(ctx context.Context, open func() error) (release func(), err error) {
	backoff := slotBackoff
	for tries := 0; ; tries++ {
		s := &c.slots
		s.mu.Lock()
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		freed, others, short := s.freed, s.open, s.short
		s.mu.Unlock()
		err := open()
		if err == nil {
			s.mu.Lock()
			s.open++
			s.mu.Unlock()
			var once sync.Once
			return func() { once.Do(c.releaseSession) }, nil
		}
		var oce *xssh.OpenChannelError
		if !errors.As(err, &oce) || oce.Reason == xssh.Prohibited {
			return nil, err
		}
		if others == 0 {
			if tries >= slotRetries {
				return nil, err
			}
			if werr := sleepCtx(ctx, backoff); werr != nil {
				return nil, werr
			}
			backoff *= 2
			continue
		}
		if short != nil {
			short()
		}
		t := time.NewTimer(slotWait)
		select {
		case <-freed:
			t.Stop()
		case <-t.C:
			return nil, &SessionLimitError{Host: c.Target.Label(), Open: others, Err: err}
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-c.Done():
			t.Stop()
			return nil, err
		}
		tries, backoff = 0, slotBackoff
	}
}

func (c *Client) releaseSession() {
	s := &c.slots
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.freed != nil {
		close(s.freed)
	}
	s.freed = make(chan struct{})
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openSession is a new session counted as Session does; end closes it.
func (c *Client) openSession(ctx context.Context) (sess *xssh.Session, end func(), err error) {
	release, err := c.Session(ctx, func() (err error) { sess, err = c.NewSession(); return err })
	if err != nil {
		return nil, nil, fmt.Errorf("open session on %s: %w", c.Target.Label(), err)
	}
	return sess, func() { sess.Close(); release() }, nil
}
