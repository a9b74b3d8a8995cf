package executor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/remote"
)

// A teardown's helper calls (what the drain asks the host of a controller
// that does not answer, the cleanup script, the removal) share one
// conversation with the helper, opened in the background as soon as the
// host is connected, while the drain talks to the controllers: the host
// check and the helper's start then cost no round trip of their own, and
// each call one.

// helperConv is a connection's conversation with the helper, being
// opened until ready is closed.
type helperConv struct {
	ready chan struct{}
	err   error                // why the helper could not be reached
	mu    sync.Mutex           // one request at a time; guards cv once ready
	cv    *remote.Conversation // nil when the helper had to be put in place, or it yielded: each call then runs it anew
	// yielding is set once a server short of session channels was
	// asked for this conversation's (yield).
	yielding atomic.Bool
}

// openHelper starts looking for the helper under root (the task's) the
// way a launch does (converseWarm): where it is cached, one command
// checks the host and the helper's whole path and starts it, with the
// protocol handshake for its first request; elsewhere the helper is put
// in place (ensureHelper) and each call is a command of its own. Every
// helper call and lookup on hc waits for it.
func (hc *hostConn) openHelper(ctx context.Context, root string) {
	hv := &helperConv{ready: make(chan struct{})}
	hc.conv = hv
	go func() {
		defer close(hv.ready)
		cv, err := hc.converseHelper(ctx, root)
		hv.mu.Lock()
		hv.cv, hv.err = cv, err
		hv.mu.Unlock()
	}()
}

// converseHelper is openHelper's work: the conversation when the cached
// helper took the handshake, else nil once the helper is in place.
func (hc *hostConn) converseHelper(ctx context.Context, root string) (*remote.Conversation, error) {
	first, err := protocol.EncodeRequest(protocol.OpVersion, nil)
	if err != nil {
		return nil, err
	}
	cv, err := hc.converseWarm(ctx, root, protocol.OpVersion, first)
	if err != nil {
		return nil, err
	}
	if cv != nil {
		var vi protocol.VersionInfo
		err := cv.Next(probeTimeout, &vi, nil)
		if err == nil && vi.Protocol == protocol.Protocol() && hc.info.Helper != nil {
			hc.helper = &hc.info.Helper.Helper
			return cv, nil
		}
		cv.Finish(probeTimeout)
		var re *remote.Error
		if err != nil && (!errors.As(err, &re) || re.Code != protocol.CodeProtocol) {
			return nil, err
		}
		// A copy that speaks another protocol: another one is put in
		// place, as for a launch.
		hc.info.Helper = nil
	}
	_, _, err = hc.ensureHelper(ctx)
	return nil, err
}

// wait waits until the helper was looked for (nothing to wait for on a
// connection that never opened one), and says why it cannot be reached.
func (hv *helperConv) wait(ctx context.Context) error {
	if hv == nil {
		return nil
	}
	select {
	case <-hv.ready:
		return hv.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call sends one request over the conversation; handled is false when
// there is none, so that the call runs the helper anew.
func (hv *helperConv) call(ctx context.Context, op string, req, res any) (handled bool, err error) {
	if hv == nil {
		return false, nil
	}
	if err := hv.wait(ctx); err != nil {
		return true, err
	}
	hv.mu.Lock()
	defer hv.mu.Unlock()
	if hv.cv == nil {
		return false, nil
	}
	return true, hv.cv.Call(ctx, op, req, res)
}

// yield gives the conversation's session channel back to a server that
// allows few per connection (MaxSessions 1: a drain through the helper
// relay needs one beside it): once it is open and no request is in
// flight, it ends, and later calls run the helper anew, each a command of
// its own. The shortage's waiter is woken when the channel closes.
func (hv *helperConv) yield() {
	if hv == nil || hv.yielding.Swap(true) {
		return
	}
	go func() {
		<-hv.ready
		hv.mu.Lock()
		defer hv.mu.Unlock()
		if hv.cv != nil {
			hv.cv.Finish(0)
			hv.cv = nil
		}
	}()
}

// close ends the conversation once the connection under it is closed,
// which ends the helper (its input ends) and the look for it alike.
func (hv *helperConv) close() {
	if hv == nil {
		return
	}
	<-hv.ready
	hv.mu.Lock()
	defer hv.mu.Unlock()
	if hv.cv != nil {
		hv.cv.Finish(0)
	}
}
