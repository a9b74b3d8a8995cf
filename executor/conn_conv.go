package executor

import (
	"context"
	"errors"
	"sync"

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
	cv    *remote.Conversation // nil when the helper had to be put in place: each call then runs it anew
	mu    sync.Mutex           // one request at a time
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
		hv.cv, hv.err = hc.converseHelper(ctx, root)
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
	if hv.cv == nil {
		return false, nil
	}
	hv.mu.Lock()
	defer hv.mu.Unlock()
	return true, hv.cv.Call(ctx, op, req, res)
}

// close ends the conversation once the connection under it is closed,
// which ends the helper (its input ends) and the look for it alike.
func (hv *helperConv) close() {
	if hv == nil {
		return
	}
	<-hv.ready
	if hv.cv != nil {
		hv.cv.Finish(0)
	}
}
