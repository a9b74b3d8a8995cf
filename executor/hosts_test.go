package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// host ls resolves every host (concurrently), looks a jump host that many
// hosts share up once, and reads the config afresh on every listing.
func TestListHostsSharesJumpLookupsAndRereadsConfig(t *testing.T) {
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("this test needs the OpenSSH client: %v", err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "ssh-G.log")
	// The client kandev-exec runs: the real one, logging each destination.
	wrapper := filepath.Join(dir, "ssh")
	script := fmt.Sprintf("#!/bin/sh\nfor a; do last=$a; done\necho \"$last\" >> %q\nexec %q \"$@\"\n", log, ssh)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	const n = 30
	writeConfig := func(bastionUser string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Host bastion\n  HostName 192.0.2.1\n  User %s\n", bastionUser)
		for i := range n {
			fmt.Fprintf(&b, "Host h%02d\n  HostName 10.0.0.%d\n  User deploy\n  ProxyJump bastion\n", i, i+1)
		}
		cfg := filepath.Join(dir, "ssh_config")
		if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := writeConfig("ops")
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("h%02d", i)
		data, _ := json.Marshal(records.Host{Name: name, Alias: name, WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
		if _, err := st.Create(ctx, records.KindHost, name, data, state.Event{Type: "host.added"}); err != nil {
			t.Fatal(err)
		}
	}
	e := New(Config{Store: st, SSHConfig: cfg, SSHBinary: wrapper})

	hosts, err := e.ListHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != n {
		t.Fatalf("%d hosts listed, want %d", len(hosts), n)
	}
	for i, h := range hosts {
		want := fmt.Sprintf("h%02d deploy@10.0.0.%d:22 via ops@192.0.2.1:22", i, i+1)
		got := fmt.Sprintf("%s %s@%s:%d via", h.Name, h.User, h.Hostname, h.Port)
		for _, j := range h.ProxyJumpHops {
			got += " " + j.Destination
		}
		if got != want || h.ResolveError != "" {
			t.Errorf("row %d: %q (%s), want %q", i, got, h.ResolveError, want)
		}
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(calls), "bastion\n"); got != 1 {
		t.Errorf("the shared jump host was looked up %d times, want once", got)
	}
	if got := strings.Count(string(calls), "\n"); got != n+1 {
		t.Errorf("%d ssh -G runs for %d hosts behind one bastion, want %d", got, n, n+1)
	}

	// A changed config takes effect at the next listing.
	writeConfig("newops")
	hosts, err = e.ListHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if len(h.ProxyJumpHops) != 1 || h.ProxyJumpHops[0].User != "newops" {
			t.Fatalf("%s: hops %+v after the config changed, want user newops", h.Name, h.ProxyJumpHops)
		}
	}
}

// Regression: host ls resolves its hosts at the same time. Each
// `ssh -G` waits at a gate until another one is there too, so a listing
// that resolved one host after the other would hold its first lookup
// alone until the gate gave up.
func TestListHostsResolvesConcurrently(t *testing.T) {
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("this test needs the OpenSSH client: %v", err)
	}
	dir := t.TempDir()
	g := newGate(t)
	wrapper := filepath.Join(dir, "ssh")
	script := "#!/bin/sh\nfor a; do last=$a; done\n" + g.shell(`"$last"`) + fmt.Sprintf("exec %q \"$@\"\n", ssh)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host a1\n  HostName 10.0.0.1\nHost a2\n  HostName 10.0.0.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for _, name := range []string{"a1", "a2"} {
		data, _ := json.Marshal(records.Host{Name: name, Alias: name, WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
		if _, err := st.Create(ctx, records.KindHost, name, data, state.Event{Type: "host.added"}); err != nil {
			t.Fatal(err)
		}
	}
	e := New(Config{Store: st, SSHConfig: cfg, SSHBinary: wrapper})

	type listing struct {
		hosts []HostView
		err   error
	}
	done := make(chan listing, 1)
	go func() {
		hosts, err := e.ListHosts(ctx)
		done <- listing{hosts, err}
	}()
	if who := g.together(2); len(who) != 2 {
		t.Errorf("ssh -G at the gate at once: %q, want both hosts' lookups", who)
	}
	l := <-done
	if l.err != nil {
		t.Fatal(l.err)
	}
	if len(l.hosts) != 2 || l.hosts[0].Hostname != "10.0.0.1" || l.hosts[1].Hostname != "10.0.0.2" {
		t.Fatalf("listed %+v, want a1 at 10.0.0.1 and a2 at 10.0.0.2", l.hosts)
	}
}
