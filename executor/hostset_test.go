package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Only given settings change; an empty value clears an override back to
// the host's name (alias) or the default root.
func TestHostChangesApply(t *testing.T) {
	base := records.Host{Name: "prod", Alias: "box", HostName: "10.0.0.5", Port: 2222, User: "dev",
		IdentityFiles: []string{"/k"}, IdentitiesOnly: true, ProxyJump: "bastion", WorkdirRoot: "/srv/k"}
	str := func(s string) *string { return &s }
	port, off, none := 0, false, []string{}
	h := base
	HostChanges{Alias: str(""), HostName: str(""), Port: &port, IdentitiesOnly: &off, IdentityFiles: &none, WorkdirRoot: str("")}.apply(&h)
	want := records.Host{Name: "prod", Alias: "prod", User: "dev", IdentityFiles: []string{}, ProxyJump: "bastion", WorkdirRoot: records.DefaultWorkdirRoot}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if d := specDiff(&base, &h); !reflect.DeepEqual(d, []string{"--alias", "--hostname", "--port", "--identity-file", "--identities-only", "--workdir-root"}) {
		t.Fatalf("specDiff = %q", d)
	}
	h = base
	HostChanges{}.apply(&h)
	if !reflect.DeepEqual(h, base) || len(specDiff(&base, &h)) != 0 {
		t.Fatalf("no changes changed %+v", h)
	}
}

// updateRacer is a store on which another process changes the host
// right before this one's first update of it lands.
type updateRacer struct {
	state.Store
	rival func()
	once  sync.Once
}

func (s *updateRacer) Update(ctx context.Context, kind state.Kind, name string, expected uint64, data json.RawMessage, ev state.Event) (state.Record, error) {
	s.once.Do(s.rival)
	return s.Store.Update(ctx, kind, name, expected, data, ev)
}

// Regression: a `host set` that lost the race to another one is a
// conflict (exit 10) saying the host changed concurrently, with the
// revisions, and leaves the other's change in place; it said
// `host "box" already exists (revision 0)`.
func TestSetHostRacingAnotherSet(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	other := New(e.cfg)
	rival, mine := "rival", "mine"
	racer := &updateRacer{Store: e.cfg.Store, rival: func() {
		if _, err := other.SetHost(ctx, "box", HostChanges{User: &rival}); err != nil {
			t.Error(err)
		}
	}}
	e.cfg.Store = racer
	_, err := e.SetHost(ctx, "box", HostChanges{User: &mine})
	var ce *state.ConflictError
	if !errors.As(err, &ce) || ce.Expected != 1 || ce.Actual != 2 {
		t.Fatalf("the set that lost the race: %v", err)
	}
	if want := `host "box" changed concurrently: expected revision 1, found 2`; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if h := hostRecord(t, other); h.User != rival {
		t.Fatalf("user %q after the race, want the rival's %q", h.User, rival)
	}
}
