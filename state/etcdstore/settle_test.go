package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
)

// txnParts is a stamped write, not yet sent.
type txnParts struct {
	cmps  []clientv3.Cmp
	ops   []clientv3.Op
	entry state.Entry
	wid   string
}

// errLost stands for an answer lost in flight.
var errLost = errors.New("answer lost")

// TestSettle: a write whose answer was lost is found to have landed when
// it did; when it did not, the fence makes sure it never can; when
// another write took its sequence, it did not land.
func TestSettle(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Config{Endpoints: c.Endpoints(), Prefix: "/settle"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := state.Event{Type: "widget.added"}
	stamped := func(name string) (*reader, txnParts) {
		t.Helper()
		call, err := s.begin(ctx, "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(call.end)
		r := &reader{call: call, ctx: call.ctx}
		ch, _, err := s.planCreate(r, "widget", name, json.RawMessage(`{}`), ev)
		if err != nil {
			t.Fatal(err)
		}
		var p txnParts
		p.cmps, p.ops, p.entry, p.wid = s.stamp(r, ch)
		return r, p
	}
	send := func(p txnParts) bool {
		t.Helper()
		resp, err := s.cli.Txn(ctx).If(p.cmps...).Then(p.ops...).Commit()
		if err != nil {
			t.Fatal(err)
		}
		return resp.Succeeded
	}

	// Landed, answer lost.
	r, p := stamped("landed")
	if !send(p) {
		t.Fatal("the write did not land")
	}
	if landed, err := s.settle(r, p.entry.Epoch, p.entry.Seq, p.wid, errLost); err != nil || !landed {
		t.Fatalf("settle of a write that landed = %v, %v", landed, err)
	}

	// Never arrived: fenced off for good.
	r, p = stamped("fenced")
	if landed, err := s.settle(r, p.entry.Epoch, p.entry.Seq, p.wid, errLost); err != nil || landed {
		t.Fatalf("settle of a write that did not land = %v, %v", landed, err)
	}
	if send(p) {
		t.Fatal("a fenced write landed afterwards")
	}

	// Another write took its sequence meanwhile.
	r, p = stamped("overtaken")
	if _, err := s.Create(ctx, "widget", "other", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	if landed, err := s.settle(r, p.entry.Epoch, p.entry.Seq, p.wid, errLost); err != nil || landed {
		t.Fatalf("settle of an overtaken write = %v, %v", landed, err)
	}

	es, _ := s.Journal(ctx, 0)
	if len(es) != 2 || es[0].Name != "landed" || es[1].Name != "other" || es[1].Seq != 2 {
		t.Fatalf("journal %+v; want landed then other", es)
	}
	for _, n := range []string{"fenced", "overtaken"} {
		if _, err := s.Get(ctx, "widget", n); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("%s: %v; want it absent", n, err)
		}
	}
}
