package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// A reclaim lists a host (ReclaimPlan), then, once confirmed, applies
// the plan (ApplyReclaim), in one conversation with the helper: the
// listing of every root leaves with the command that checks the host and
// the helper's path and starts it (openConversation), and the apply is
// the next request to the same helper, on the same connection. The apply
// proves every directory again on the host whatever carries it, so
// nothing of the proof depends on this; a conversation is reused only
// for the host record it was dialled for, unchanged, and while neither
// it nor its link is known to have ended. Otherwise the apply dials
// again.

// listRoots lists roots in a new conversation with the helper, all the
// requests sent at once; each root's listing, or the failure the helper
// reported for that root alone, comes back in order. An error is the
// host's as a whole: the conversation is then over, and the listings
// come with it that were read before (they may have removed: apply, read
// at read, makes each listing remove what it proves alone).
func (hc *hostConn) listRoots(ctx context.Context, roots []string, apply *reclaim.ListApply, read time.Time) (*remote.Conversation, []rootListing, error) {
	if apply != nil {
		a := *apply
		a.ReadAgeMillis = time.Since(read).Milliseconds() // at send: the host counts on from its arrival
		apply = &a
	}
	var first []byte
	for _, root := range roots {
		b, err := protocol.EncodeRequest(protocol.OpReclaimList, reclaim.ListRequest{Root: root, Apply: apply})
		if err != nil {
			return nil, nil, err
		}
		if len(first) > 0 {
			first = append(first, '\n')
		}
		first = append(first, b...)
	}
	var got []rootListing
	cv, err := hc.openConversation(ctx, hc.host.WorkdirRoot, protocol.OpReclaimList, first, new(string), func(string) {},
		func(cv *remote.Conversation) error {
			got = make([]rootListing, len(roots))
			var stale error
			for i := range got {
				err := cv.Next(0, &got[i].listing, nil)
				var re *remote.Error
				switch {
				case err == nil:
					afterRootListed(cv)
				case !errors.As(err, &re):
					got = got[:i]
					return err // the conversation ended
				case re.Code == protocol.CodeProtocol:
					stale = err // every answer read, so the next helper starts clean
				default:
					got[i].err = err
				}
			}
			return stale
		})
	if err != nil {
		if cv != nil {
			cv.Finish(probeTimeout)
		}
		return nil, got, err
	}
	return cv, got, nil
}

// afterRootListed runs once a root's listing is read; tests end the
// conversation there, as a link that drops would.
var afterRootListed = func(*remote.Conversation) {}

// rootListing is one root's answer: its listing, or what the helper
// refused about it.
type rootListing struct {
	listing reclaim.Listing
	err     error
}

// applyIn sends the apply in cv, the listing's conversation, when there
// is one, else in a new one. Either way the call follows ctx: when it
// ends (Ctrl-C, a task's claim lost), the helper is asked to stop, and
// answers with what it removed (protocol.Cancellable). The input stays
// open until that answer, for the cancel; once answered, everything is
// done on the host, and the command ends without waiting for the
// helper's exit (a round trip).
func (hc *hostConn) applyIn(ctx context.Context, cv *remote.Conversation, req reclaim.Request, rep *reclaim.Report) error {
	if cv == nil {
		return hc.call(ctx, hc.host.WorkdirRoot, protocol.OpReclaimApply, req, rep)
	}
	defer cv.Finish(probeTimeout)
	defer cv.Follow(ctx)()
	if err := cv.Send(protocol.OpReclaimApply, req); err != nil {
		return err
	}
	err := cv.Next(0, rep, nil)
	if err == nil {
		cv.Finish(0) // answered, all done on the host: its exit is not waited for
	}
	return err
}

// keptFor bounds how long a listing's connection waits for its apply (a
// confirmation prompt is answered within it, or the apply dials again).
const keptFor = 2 * time.Minute

type keptConns struct {
	mu sync.Mutex
	m  map[string]*keptConn
}

type keptConn struct {
	hc    *hostConn
	cv    *remote.Conversation // the listing's, its helper waiting for the next request
	rec   []byte               // the host record it was dialled for, as JSON
	timer *time.Timer
}

// keep holds hc and cv for the next take of its host, closing those
// held before.
func (k *keptConns) keep(hc *hostConn, cv *remote.Conversation) {
	kc := &keptConn{hc: hc, cv: cv}
	rec, err := json.Marshal(hc.host)
	if err != nil {
		kc.close()
		return
	}
	kc.rec = rec
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*keptConn{}
	}
	if old := k.m[hc.host.Name]; old != nil {
		old.timer.Stop()
		old.close()
	}
	k.m[hc.host.Name] = kc
	kc.timer = time.AfterFunc(keptFor, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.m[hc.host.Name] == kc {
			delete(k.m, hc.host.Name)
			kc.close()
		}
	})
}

// take returns the connection and conversation held for h when they
// were opened for h as it is now and both are alive, else nils; the
// caller closes them.
func (k *keptConns) take(h *records.Host) (*hostConn, *remote.Conversation) {
	k.mu.Lock()
	kc := k.m[h.Name]
	delete(k.m, h.Name)
	k.mu.Unlock()
	if kc == nil {
		return nil, nil
	}
	kc.timer.Stop()
	rec, err := json.Marshal(h)
	if err != nil || !bytes.Equal(rec, kc.rec) || kc.hc.knownLost() || kc.hc.helper == nil || kc.cv.Ended() {
		kc.close()
		return nil, nil
	}
	return kc.hc, kc.cv
}

// knownLost: the link is already known dead (the watchdog's verdict, the
// connection closed), asked without a keepalive's round trip of its own:
// a link that died since is found by the apply's request itself.
func (hc *hostConn) knownLost() bool {
	select {
	case <-hc.c.Done():
		return true
	default:
		return hc.wd.Err() != nil
	}
}

// close ends the conversation's input (its helper exits) and the
// connection.
func (kc *keptConn) close() {
	kc.cv.CloseInput()
	kc.hc.Close()
}
