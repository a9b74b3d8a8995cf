package executor

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// A reclaim lists a host (ReclaimPlan), then, once confirmed, applies
// the plan (ApplyReclaim). The connection the listing dialled, its helper
// found, serves the apply that follows in the same process: one dial and
// one helper check for both instead of two. The apply call proves every
// directory again on the host whatever connection carries it, so nothing
// of the proof depends on this; a connection is reused only for the host
// record it was dialled for, unchanged, and while its link is alive.

// keptFor bounds how long a listing's connection waits for its apply (a
// confirmation prompt is answered within it, or the apply dials again).
const keptFor = 2 * time.Minute

type keptConns struct {
	mu sync.Mutex
	m  map[string]*keptConn
}

type keptConn struct {
	hc    *hostConn
	rec   []byte // the host record it was dialled for, as JSON
	timer *time.Timer
}

// keep holds hc for the next take of its host, closing one held before.
func (k *keptConns) keep(hc *hostConn) {
	rec, err := json.Marshal(hc.host)
	if err != nil {
		hc.Close()
		return
	}
	kc := &keptConn{hc: hc, rec: rec}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*keptConn{}
	}
	if old := k.m[hc.host.Name]; old != nil {
		old.timer.Stop()
		old.hc.Close()
	}
	k.m[hc.host.Name] = kc
	kc.timer = time.AfterFunc(keptFor, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.m[hc.host.Name] == kc {
			delete(k.m, hc.host.Name)
			hc.Close()
		}
	})
}

// take returns the connection held for h when it was dialled for h as
// it is now and its link is alive, else nil; the caller closes it.
func (k *keptConns) take(h *records.Host) *hostConn {
	k.mu.Lock()
	kc := k.m[h.Name]
	delete(k.m, h.Name)
	k.mu.Unlock()
	if kc == nil {
		return nil
	}
	kc.timer.Stop()
	rec, err := json.Marshal(h)
	if err != nil || !bytes.Equal(rec, kc.rec) || kc.hc.lost() || kc.hc.helper == nil {
		kc.hc.Close()
		return nil
	}
	return kc.hc
}
