package etcdstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// diagnose opens the store the way a command does and asks it for its
// diagnosis, or asks the error that kept it from opening (doctor's two
// ways), mapping each finding's name to "status: detail".
func diagnose(t *testing.T, cfg etcdstore.Config) map[string]string {
	t.Helper()
	ctx := context.Background()
	var d state.Diagnoser
	s, err := etcdstore.Open(ctx, cfg)
	switch {
	case err == nil:
		defer s.Close()
		d = s
	case !errors.As(err, &d):
		t.Fatalf("open failed with %v, which cannot diagnose the store", err)
	}
	m := map[string]string{}
	for _, f := range d.Diagnose(ctx) {
		m[f.Name] = f.Status + ": " + f.Detail
	}
	return m
}

func wantFinding(t *testing.T, fs map[string]string, name, status, detail string) {
	t.Helper()
	got, ok := fs[name]
	if !ok || !strings.HasPrefix(got, status+": ") || !strings.Contains(got, detail) {
		t.Errorf("%s = %q; want %s containing %q (all: %v)", name, got, status, detail, fs)
	}
}

func TestDiagnoseHealthyCluster(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	cfg := etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/doc"}
	fs := diagnose(t, cfg)
	wantFinding(t, fs, "store endpoints", "ok", c.Endpoints()[2])
	wantFinding(t, fs, "store tls", "ok", "loopback")
	wantFinding(t, fs, "store auth", "ok", "no user authentication")
	wantFinding(t, fs, "store latency", "ok", "median")
	wantFinding(t, fs, "store members", "ok", "3 member(s)")
	wantFinding(t, fs, "store members", "ok", "leader m")
	wantFinding(t, fs, "store journal", "ok", "0 entries")

	s := openStore(t, cfg)
	if _, err := s.Create(ctx, helperKind, "a", json.RawMessage(`{}`), ev); err != nil {
		t.Fatal(err)
	}
	epoch, _ := s.Epoch(ctx)
	wantFinding(t, diagnose(t, cfg), "store journal", "ok", fmt.Sprintf("epoch %d, 1 entries", epoch))

	c.Kill(1)
	fs = diagnose(t, cfg)
	wantFinding(t, fs, "store endpoints", "warn", "2 of 3 answer")
	wantFinding(t, fs, "store members", "warn", "m1 does not answer")
}

func TestDiagnoseFailures(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		c := etcdtest.Start(t, 1)
		c.Kill(0)
		fs := diagnose(t, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/doc", Timeout: time.Second})
		wantFinding(t, fs, "store endpoints", "fail", c.Endpoints()[0]+": dial tcp")
	})
	t.Run("untrusted server", func(t *testing.T) {
		c := etcdtest.Start(t, 1, etcdtest.WithTLS())
		f := c.TLS()
		cfg := etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/doc", Timeout: time.Second,
			TLS: &etcdstore.TLSFiles{CAFile: f.OtherCA, CertFile: f.Cert, KeyFile: f.Key}}
		fs := diagnose(t, cfg)
		wantFinding(t, fs, "store endpoints", "fail", "x509: certificate signed by unknown authority")
		cfg.TLS.CAFile = f.CA
		fs = diagnose(t, cfg)
		wantFinding(t, fs, "store tls", "ok", `servers verified against `+f.CA+`; client certificate "etcdtest client" expires`)
		wantFinding(t, fs, "store auth", "ok", "reads /doc/")
	})
	t.Run("bad password", func(t *testing.T) {
		c := etcdtest.Start(t, 1)
		if err := c.EnableAuth("kandev", "s3cret", "/team/"); err != nil {
			t.Fatal(err)
		}
		cfg := etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/team/k", Username: "kandev", Password: "wrong"}
		wantFinding(t, diagnose(t, cfg), "store auth", "fail", `refused user "kandev": etcdserver: authentication failed`)
		cfg.Password = "s3cret"
		fs := diagnose(t, cfg)
		wantFinding(t, fs, "store auth", "ok", `user "kandev" reads /team/k/`)
		wantFinding(t, fs, "store members", "ok", "1 member(s)")
		cfg.Prefix = "/elsewhere"
		wantFinding(t, diagnose(t, cfg), "store auth", "fail", "permission denied")
	})
	t.Run("plain text across the network", func(t *testing.T) {
		fs := diagnose(t, etcdstore.Config{Endpoints: []string{"192.0.2.1:2379"}, Prefix: "/doc", AllowPlaintext: true, Timeout: time.Second})
		wantFinding(t, fs, "store endpoints", "fail", "192.0.2.1:2379")
	})
}
