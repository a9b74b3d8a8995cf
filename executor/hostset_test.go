package executor

import (
	"reflect"
	"testing"
)

// Only given settings change; an empty value clears an override back to
// the host's name (alias) or the default root.
func TestHostChangesApply(t *testing.T) {
	base := Host{Name: "prod", Alias: "box", HostName: "10.0.0.5", Port: 2222, User: "dev",
		IdentityFiles: []string{"/k"}, IdentitiesOnly: true, ProxyJump: "bastion", WorkdirRoot: "/srv/k"}
	str := func(s string) *string { return &s }
	port, off, none := 0, false, []string{}
	h := base
	HostChanges{Alias: str(""), HostName: str(""), Port: &port, IdentitiesOnly: &off, IdentityFiles: &none, WorkdirRoot: str("")}.apply(&h)
	want := Host{Name: "prod", Alias: "prod", User: "dev", IdentityFiles: []string{}, ProxyJump: "bastion", WorkdirRoot: DefaultWorkdirRoot}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if d := base.specDiff(&h); !reflect.DeepEqual(d, []string{"--alias", "--hostname", "--port", "--identity-file", "--identities-only", "--workdir-root"}) {
		t.Fatalf("specDiff = %q", d)
	}
	h = base
	HostChanges{}.apply(&h)
	if !reflect.DeepEqual(h, base) || len(base.specDiff(&h)) != 0 {
		t.Fatalf("no changes changed %+v", h)
	}
}
