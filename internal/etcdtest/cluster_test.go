package etcdtest

import (
	"context"
	"testing"
	"time"
)

// TestClusterSurvivesLeaderKill: three members elect a leader; killing it
// elects another, and the killed member rejoins with its data.
func TestClusterSurvivesLeaderKill(t *testing.T) {
	c := Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	next, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("killed member %d still leads", leader)
	}
	if _, err := cli.Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("write after the leader was killed: %v", err)
	}
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	r, err := cli.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v2" {
		t.Fatalf("after restart: %v, %v", r, err)
	}
}

// TestTLSCluster: a TLS member answers a client with the right CA and
// certificate only.
func TestTLSCluster(t *testing.T) {
	c := Start(t, 1, WithTLS())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("TLS put: %v", err)
	}
	c.tls.CA = c.tls.OtherCA
	bad, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
	defer scancel()
	if _, err := bad.Get(sctx, "k"); err == nil {
		t.Fatal("a client trusting another CA was answered")
	}
}
