package sshconfig

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrent lookups of one key run once and all see its result; other
// keys (another name, another explicit user) are their own lookups.
func TestLookupCacheRunsEachKeyOnce(t *testing.T) {
	c := NewLookupCache()
	var runs atomic.Int32
	release := make(chan struct{})
	fill := func() (settings, error) {
		runs.Add(1)
		<-release
		return settings{"hostname": {"10.0.0.1"}}, nil
	}
	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.get(context.Background(), lookupKey("bastion", Overrides{}), fill)
			if err == nil {
				results[i] = s.first("hostname")
			}
		}()
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("fill ran %d times for one key", runs.Load())
	}
	for i, r := range results {
		if r != "10.0.0.1" {
			t.Errorf("caller %d got %q", i, r)
		}
	}
	if lookupKey("bastion", Overrides{}) == lookupKey("bastion", Overrides{User: "ops"}) ||
		lookupKey("bastion", Overrides{}) == lookupKey("bastion", Overrides{viaJump: true}) {
		t.Error("explicit settings must be part of the key")
	}
}

// listing resolves names with a cache restored from saved, as a host
// listing does, and returns each HostName, how many lookups ran and what
// the cache keeps for the next listing.
func listing(t *testing.T, saved Saved, opts ResolveOptions, names ...string) (map[string]string, int, Saved, bool) {
	t.Helper()
	c := NewLookupCache()
	c.Restore(saved, opts)
	opts.Cache = c
	got := map[string]string{}
	for _, n := range names {
		tg, err := Resolve(context.Background(), n, Overrides{}, opts)
		if err != nil {
			t.Fatalf("resolve %s: %v", n, err)
		}
		got[n] = tg.HostName
	}
	next, ok := c.Snapshot(opts)
	return got, c.fresh, next, ok
}

// Answers kept by one listing serve the next while every file reads the
// same; a change to the main file, to an included one, or to the set of
// files an Include matches is seen by the very next listing. Both ways
// of reading the config (`ssh -G` and the parser) are cached alike.
func TestLookupCacheKeptUntilAConfigFileChanges(t *testing.T) {
	for _, bin := range []string{"", "-"} {
		dir := t.TempDir()
		inc := filepath.Join(dir, "inc")
		cfg := writeFile(t, dir, "config", "Include "+inc+"/*.conf\nHost web\n  HostName 10.0.0.1\n")
		writeFile(t, inc, "b.conf", "Host db\n  HostName 10.0.0.2\n")
		opts := ResolveOptions{ConfigFile: cfg, SSHBinary: bin}
		want := func(step string, got map[string]string, web, db string) {
			t.Helper()
			if got["web"] != web || got["db"] != db {
				t.Errorf("bin %q, %s: web %s db %s, want %s %s", bin, step, got["web"], got["db"], web, db)
			}
		}

		got, fresh, saved, ok := listing(t, Saved{}, opts, "web", "db")
		want("first listing", got, "10.0.0.1", "10.0.0.2")
		if fresh != 2 || !ok || len(saved.Lookups) != 2 {
			t.Fatalf("bin %q: first listing looked up %d, kept %v %d answers", bin, fresh, ok, len(saved.Lookups))
		}
		got, fresh, _, ok = listing(t, saved, opts, "web", "db")
		want("unchanged", got, "10.0.0.1", "10.0.0.2")
		if fresh != 0 || ok {
			t.Errorf("bin %q: an unchanged config looked up %d names again (new answers to keep: %v)", bin, fresh, ok)
		}

		steps := []struct {
			name, file, body, web, db string
		}{
			{"included file changed", "inc/b.conf", "Host db\n  HostName 10.0.0.3\n", "10.0.0.1", "10.0.0.3"},
			{"a new file the Include matches", "inc/a.conf", "Host web\n  HostName 10.0.0.7\n", "10.0.0.7", "10.0.0.3"},
			{"main file changed", "config", "Include " + inc + "/b.conf\nHost web\n  HostName 10.0.0.8\n", "10.0.0.8", "10.0.0.3"},
		}
		for _, s := range steps {
			writeFile(t, dir, s.file, s.body)
			got, fresh, saved, ok = listing(t, saved, opts, "web", "db")
			want(s.name, got, s.web, s.db)
			if fresh != 2 || !ok {
				t.Errorf("bin %q, %s: looked up %d of 2 names, kept %v", bin, s.name, fresh, ok)
			}
		}
	}
}

// A config whose answers depend on more than its files is never kept,
// and one naming an environment variable is kept per value of it.
func TestConfigDigestCoversWhatAnswersDependOn(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{
		"Match exec \"test -e /tmp/x\"\n  HostName a\n",
		"Match !localnetwork 10.0.0.0/8\n  HostName a\n",
		"CanonicalizeHostname yes\n",
		"Include ~/%u.conf\n",
	} {
		cfg := writeFile(t, dir, "config", body)
		if _, ok := configDigest(ResolveOptions{ConfigFile: cfg, SSHBinary: "-"}); ok {
			t.Errorf("answers of %q are kept", body)
		}
	}
	cfg := writeFile(t, dir, "config", "Host web\n  IdentityAgent ${KANDEV_TEST_AGENT}\n")
	opts := ResolveOptions{ConfigFile: cfg, SSHBinary: "-"}
	t.Setenv("KANDEV_TEST_AGENT", "/run/a")
	t.Setenv("KANDEV_TEST_OTHER", "1")
	a, okA := configDigest(opts)
	t.Setenv("KANDEV_TEST_OTHER", "2")
	b, okB := configDigest(opts)
	t.Setenv("KANDEV_TEST_AGENT", "/run/b")
	c, okC := configDigest(opts)
	if !okA || !okB || !okC || a != b || b == c {
		t.Errorf("digests %s %s %s (%v %v %v): an unnamed variable must not count, a named one must", a, b, c, okA, okB, okC)
	}
}

// An answer with a ProxyCommand is not kept: a command line is read from
// the config at each dial and never written down.
func TestLookupCacheNeverKeepsAProxyCommand(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", "Host px\n  ProxyCommand nc %h %p\nHost web\n  HostName 10.0.0.1\n")
	opts := ResolveOptions{ConfigFile: cfg}
	_, fresh, saved, ok := listing(t, Saved{}, opts, "px", "web")
	if fresh != 2 || !ok {
		t.Fatalf("looked up %d, kept %v", fresh, ok)
	}
	if _, kept := saved.Lookups[lookupKey("px", Overrides{})]; kept || len(saved.Lookups) != 1 {
		t.Errorf("kept %v: want web's answer only", saved.Lookups)
	}
}
