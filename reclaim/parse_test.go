package reclaim

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	oid := strings.Repeat("a", 40)
	recs := []string{
		"# branch.oid " + oid,
		"# branch.head (detached)",
		"1 .M N... 100644 100644 100644 " + oid + " " + oid + " with space.txt",
		"2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new name", "old name",
		"u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " conflict.go",
		"? untracked dir/file",
		"! build/",
		"",
	}
	s, err := parseStatus([]byte(strings.Join(recs, "\x00")))
	if err != nil {
		t.Fatal(err)
	}
	want := status{head: oid, changed: []string{"with space.txt", "new name"}, unmerged: []string{"conflict.go"},
		untracked: []string{"untracked dir/file"}, ignored: []string{"build/"}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if s, err := parseStatus([]byte("# branch.oid (initial)\x00")); err != nil || s.head != "" {
		t.Fatalf("unborn: %+v %v", s, err)
	}
	for _, bad := range []string{"X what\x00", "1 .M short\x00", "# branch.oid nothex\x00"} {
		if _, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParsePackedRefs(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 64)
	refs := map[string]string{}
	in := "# pack-refs with: peeled fully-peeled sorted\n" + a + " refs/heads/main\n" + b + " refs/tags/v1\n^" + a + "\n"
	if err := parsePackedRefs([]byte(in), refs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(refs, map[string]string{"refs/heads/main": a, "refs/tags/v1": b}) {
		t.Fatalf("refs = %v", refs)
	}
	if err := parsePackedRefs([]byte("garbage line\n"), map[string]string{}); err == nil {
		t.Fatal("no error for garbage")
	}
}

func TestParseFetchedRefs(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	ns := proofNamespace + "n/"
	got, err := parseFetchedRefs([]byte(a+" commit   "+ns+"heads/main\n"+b+" tag "+c+" commit "+ns+"tags/v1\n"+c+" commit   "+ns+"heads/x\n"), ns)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.refs, map[string]string{"refs/heads/main": a, "refs/tags/v1": b, "refs/heads/x": c}) ||
		!reflect.DeepEqual(got.oids, map[string]string{a: "refs/heads/main", b: "refs/tags/v1", c: "refs/tags/v1"}) || !reflect.DeepEqual(got.commits, []string{a, c}) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"warning: something\n", a + " commit   refs/heads/outside\n"} {
		if _, err := parseFetchedRefs([]byte(bad), ns); err == nil {
			t.Fatalf("no error for %q", bad)
		}
	}
}

func TestMountsBelow(t *testing.T) {
	table := []string{"/", "/srv/kandev/tasks/t-1", "/srv/kandev/tasks/t-10", "/srv/kandev/tasks/t-1/.kandev/mnt", "/srv/kandev/tasks/t-2x"}
	got := mountsBelow(table, "/srv/kandev/tasks/t-1")
	if !reflect.DeepEqual(got, []string{"/srv/kandev/tasks/t-1", "/srv/kandev/tasks/t-1/.kandev/mnt"}) {
		t.Fatalf("got %q", got)
	}
}

// A relative remote path is resolved from the checkout before it is
// shared: the same string from two places is two remotes.
func TestRemoteKey(t *testing.T) {
	for _, c := range []struct{ dir, url, want string }{
		{"/r/tasks/t-1", "../lib.git", "/r/tasks/lib.git"},
		{"/r/tasks/t-2/web", "../lib.git", "/r/tasks/t-2/lib.git"},
		{"/r/tasks/t-1", "lib.git", "/r/tasks/t-1/lib.git"},
		{"/r/tasks/t-1", "/srv/lib.git", "/srv/lib.git"},
		{"/r/tasks/t-1", "https://example.com/a/lib.git", "https://example.com/a/lib.git"},
		{"/r/tasks/t-1", "git@example.com:a/lib.git", "git@example.com:a/lib.git"},
		{"/r/tasks/t-1", "file:///srv/lib.git", "file:///srv/lib.git"},
	} {
		if got := remoteKey(c.dir, c.url); got != c.want {
			t.Errorf("remoteKey(%q, %q) = %q, want %q", c.dir, c.url, got, c.want)
		}
	}
}

// Which remotes of a checkout the agent made count, and as what.
func TestOutsideURL(t *testing.T) {
	dir, tasks := "/r/tasks/t-1", "/r/tasks"
	for _, c := range []struct{ raw, url, why string }{
		{"https://example.com/a.git", "https://example.com/a.git", ""},
		{"ssh://[::1]:22/a.git", "ssh://[::1]:22/a.git", ""},
		{"git@example.com:a.git", "git@example.com:a.git", ""},
		{"/srv/a.git", "/srv/a.git", ""},
		{"file:///srv/a.git", "/srv/a.git", ""},
		{"../../elsewhere.git", "/r/elsewhere.git", ""},
		{".", "", "inside the task directories"},
		{"../t-2/.git", "", "inside the task directories"},
		{"file:///r/tasks/t-1/.kandev/m.git", "", "inside the task directories"},
		{"ext::sh -c touch% x", "", "a remote helper transport"},
		{"fd::3", "", "a remote helper transport"},
		{"foo://x/y", "", `transport "foo"`},
		{"file://other/srv/a.git", "", "another machine"},
	} {
		url, why := outsideURL(dir, tasks, c.raw)
		if url != c.url || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("outsideURL(%q) = %q, %q; want %q, %q", c.raw, url, why, c.url, c.why)
		}
	}
}
