package etcdstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
	"github.com/kdlbs/kandev-exec/state/statetest"
)

var ev = state.Event{Type: "widget.added"}

func TestParseURL(t *testing.T) {
	good := []struct {
		in, eps, prefix string
	}{
		{"etcd://127.0.0.1:2379/kandev", "127.0.0.1:2379", "/kandev"},
		{"etcd://a:1,b:2,c/team/kandev/", "a:1,b:2,c:2379", "/team/kandev"},
		{"etcd://[::1]:2379/p", "[::1]:2379", "/p"},
		{"etcd://[::1]/p", "[::1]:2379", "/p"},
	}
	for _, g := range good {
		eps, prefix, err := etcdstore.ParseURL(g.in)
		if err != nil || strings.Join(eps, ",") != g.eps || prefix != g.prefix {
			t.Errorf("ParseURL(%q) = %v, %q, %v; want %s, %s", g.in, eps, prefix, err, g.eps, g.prefix)
		}
	}
	for _, bad := range []string{"http://h:2379/p", "etcd://", "etcd:///p", "etcd://h:2379", "etcd://h:2379/", "etcd://h:x/p",
		"etcd://h:2379,/p", "etcd://u@h:2379/p", "etcd://h:2379/a//b", "etcd://h:70000/p"} {
		if eps, p, err := etcdstore.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = %v, %q; want an error", bad, eps, p)
		}
	}
}

func TestLoopback(t *testing.T) {
	for eps, want := range map[string]bool{
		"127.0.0.1:2379": true, "localhost:2379,127.0.0.2:1": true, "[::1]:2379": true,
		"10.0.0.1:2379": false, "127.0.0.1:1,etcd.example:2379": false, "localhost.example:2379": false,
	} {
		if got := etcdstore.Loopback(strings.Split(eps, ",")); got != want {
			t.Errorf("Loopback(%s) = %v, want %v", eps, got, want)
		}
	}
}

// TestPlaintextRefused: plain text to a non-loopback endpoint is refused
// before anything is sent, unless allowed.
func TestPlaintextRefused(t *testing.T) {
	ctx := context.Background()
	cfg := etcdstore.Config{Endpoints: []string{"192.0.2.1:2379"}, Prefix: "/p", Timeout: 300 * time.Millisecond}
	_, err := etcdstore.Open(ctx, cfg)
	var oe *state.OpenError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "--store-insecure") {
		t.Fatalf("Open in plain text to 192.0.2.1: %v; want an *OpenError naming --store-insecure", err)
	}
	cfg.AllowPlaintext = true
	_, err = etcdstore.Open(ctx, cfg)
	var ue *state.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "etcd://192.0.2.1:2379/p") {
		t.Fatalf("Open of an address nobody answers: %v; want *UnreachableError naming it", err)
	}
}

func TestTLS(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.WithTLS())
	files := c.TLS()
	tlsFiles := &etcdstore.TLSFiles{CAFile: files.CA, CertFile: files.Cert, KeyFile: files.Key}
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), TLS: tlsFiles})
	if _, err := s.Create(context.Background(), helperKind, "a", json.RawMessage(`{}`), ev); err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}

	wrongCA := *tlsFiles
	wrongCA.CAFile = files.OtherCA
	_, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/p", TLS: &wrongCA, Timeout: time.Second})
	var ue *state.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("Open trusting another CA: %v; want *UnreachableError", err)
	}

	loose := t.TempDir() + "/key.pem"
	b, _ := os.ReadFile(files.Key)
	os.WriteFile(loose, b, 0o644)
	looseKey := *tlsFiles
	looseKey.KeyFile = loose
	_, err = etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/p", TLS: &looseKey})
	var oe *state.OpenError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "chmod 600 "+loose) {
		t.Fatalf("Open with a world-readable key: %v; want an *OpenError saying chmod 600", err)
	}
}

func TestUserAuth(t *testing.T) {
	c := etcdtest.Start(t, 1)
	if err := c.EnableAuth("kandev", "s3cret", "/team/"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/team/kandev", Username: "kandev", Password: "s3cret"})
	if _, err := s.Create(ctx, helperKind, "a", json.RawMessage(`{}`), ev); err != nil {
		t.Fatalf("Create as an allowed user: %v", err)
	}
	for name, cfg := range map[string]etcdstore.Config{
		"wrong password":       {Prefix: "/team/kandev", Username: "kandev", Password: "nope"},
		"prefix not granted":   {Prefix: "/other", Username: "kandev", Password: "s3cret"},
		"no credentials":       {Prefix: "/team/kandev"},
		"unknown user":         {Prefix: "/team/kandev", Username: "mallory", Password: "x"},
		"password, not a user": {Prefix: "/team/kandev", Password: "s3cret"},
	} {
		cfg.Endpoints = c.Endpoints()
		_, err := etcdstore.Open(ctx, cfg)
		var ae *state.AuthError
		var oe *state.OpenError
		if !errors.As(err, &ae) && !(name == "password, not a user" && errors.As(err, &oe)) {
			t.Errorf("%s: Open = %v; want *AuthError", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
}

// TestCorruptRecordNamesItsKey: a value that is not the record its key
// names fails Get and List naming the key and how to move it aside;
// Discard removes it and journals that.
func TestCorruptRecordNamesItsKey(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/corrupt"})
	if _, err := s.Create(ctx, helperKind, "ok", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for name, value := range map[string]string{"garbage": "{not json", "other": `{"kind":"widget","name":"ok","revision":1}`} {
		if _, err := cli.Put(ctx, "/corrupt/rec/widget/"+name, value); err != nil {
			t.Fatal(err)
		}
		_, gerr := s.Get(ctx, helperKind, name)
		_, lerr := s.List(ctx, helperKind)
		for op, err := range map[string]error{"Get": gerr, "List": lerr} {
			var ce *state.CorruptRecordError
			if !errors.As(err, &ce) || ce.Where != s.Locate(helperKind, name) || !strings.Contains(err.Error(), "etcdctl del /corrupt/rec/widget/") {
				t.Fatalf("%s of %s: %v; want a *CorruptRecordError naming its key and how to move it", op, name, err)
			}
		}
		if err := s.Discard(ctx, helperKind, name, state.Event{Type: "widget.discarded"}); err != nil {
			t.Fatal(err)
		}
		es, _ := s.Journal(ctx, 0)
		if last := es[len(es)-1]; last.Type != "widget.discarded" || last.Name != name || last.Revision != 0 {
			t.Fatalf("journal after Discard: %+v", last)
		}
	}
	if recs, err := s.List(ctx, helperKind); err != nil || len(recs) != 1 {
		t.Fatalf("List after Discard: %v, %v", recs, err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/schema"})
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "/schema/jctl", fmt.Sprintf(`{"schema_version":%d,"epoch":7,"seq":0}`, state.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	_, err = etcdstore.Open(ctx, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/schema"})
	var se *state.SchemaError
	if !errors.As(err, &se) || se.Found != state.SchemaVersion+1 {
		t.Fatalf("Open of a newer store: %v", err)
	}
	// A store already open notices before writing.
	if _, err := s.Create(ctx, helperKind, "a", json.RawMessage(`{}`), ev); !errors.As(err, &se) {
		t.Fatalf("Create after an upgrade: %v", err)
	}
}

// TestCounterWipedStartsNewEpoch: if the journal counter disappears (the
// prefix was wiped by hand), the next write starts a new epoch at seq 1.
func TestCounterWipedStartsNewEpoch(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/wiped"})
	if _, err := s.Create(ctx, helperKind, "a", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	old, _ := s.Epoch(ctx)
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Delete(ctx, "/wiped/jctl"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, helperKind, "b", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	epoch, _ := s.Epoch(ctx)
	es, _ := s.Journal(ctx, 0)
	if epoch == old || len(es) != 1 || es[0].Epoch != epoch || es[0].Seq != 1 || es[0].Name != "b" {
		t.Fatalf("after the counter was wiped: epoch %d (was %d), journal %+v", epoch, old, es)
	}
}

// TestDeadHolderKeepsClaimUntilLeaseExpires: on a shared store a holder's
// pid being gone proves nothing (another machine, another pid namespace):
// its claim stays until it expires, and etcd deletes the claim's key when
// the lease runs out.
func TestDeadHolderKeepsClaimUntilLeaseExpires(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/lease"
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix})
	if _, err := s.Create(ctx, helperKind, helperClaimed, json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd(c, "claim", prefix)
	oldID := startHelper(t, cmd)
	cmd.Process.Kill()
	cmd.Wait()
	_, err := s.AcquireClaim(ctx, helperKind, helperClaimed, time.Minute)
	var ce *state.ClaimedError
	if !errors.As(err, &ce) || ce.Holder.PID != cmd.Process.Pid {
		t.Fatalf("AcquireClaim right after its holder pid %d died: %v; want *ClaimedError (no pid proof on a shared store)", cmd.Process.Pid, err)
	}
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		r, err := cli.Get(deadline, prefix+"/claim/widget/job")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) == 0 {
			break // the lease expired and took the key with it
		}
		select {
		case <-deadline.Done():
			t.Fatal("the dead holder's claim key outlived its 1 s lease by 30 s")
		case <-time.After(50 * time.Millisecond):
		}
	}
	cl, err := s.AcquireClaim(ctx, helperKind, helperClaimed, time.Minute)
	if err != nil || cl.ID == oldID {
		t.Fatalf("AcquireClaim after the lease expired = %+v, %v", cl, err)
	}
}

// TestWriterKilledMidStream: writer processes killed at random points
// leave every record whole, each exactly where the journal says (a write
// and its entry are one transaction), and no gap in the journal.
func TestWriterKilledMidStream(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/crash"
	statetest.RunCrash(t, statetest.CrashTarget{
		Open: func(t *testing.T) state.Store {
			return openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix})
		},
		Writer: func(*testing.T) *exec.Cmd { return helperCmd(c, "writeloop", prefix) },
		Lag:    0,
	})
}

func TestClosedStore(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, etcdstore.Config{Endpoints: c.Endpoints()})
	s.Close()
	if _, err := s.Get(context.Background(), helperKind, "a"); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := s.Create(context.Background(), helperKind, "a", json.RawMessage(`{}`), ev); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
}
