package executor

import (
	"reflect"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
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
