package etcdstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
	"github.com/kdlbs/kandev-exec/state/statetest"
)

// prefixes numbers the stores of one test binary, each a fresh prefix.
var prefixes atomic.Int64

// opener opens a fresh store (its own prefix) on cluster c.
func opener(c *etcdtest.Cluster) statetest.Opener {
	return func(t *testing.T, clock *statetest.Clock) state.Store {
		t.Helper()
		return openStore(t, etcdstore.Config{Endpoints: c.Endpoints(), Now: clock.Now})
	}
}

// openStore opens cfg, on a fresh prefix when it names none.
func openStore(t *testing.T, cfg etcdstore.Config) *etcdstore.Store {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("/kandev-test/%d", prefixes.Add(1))
	}
	s, err := etcdstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceOneMember(t *testing.T) {
	c := etcdtest.Start(t, 1)
	statetest.Run(t, opener(c))
	t.Run("Copier", func(t *testing.T) { statetest.RunCopier(t, opener(c)) })
}

func TestConformanceThreeMembers(t *testing.T) {
	c := etcdtest.Start(t, 3)
	statetest.Run(t, opener(c))
	t.Run("Copier", func(t *testing.T) { statetest.RunCopier(t, opener(c)) })
}

// TestCopyAcrossBackends: state.Copy from a file store into etcd and
// back, resumable and idempotent both ways.
func TestCopyAcrossBackends(t *testing.T) {
	c := etcdtest.Start(t, 1)
	file := func(t *testing.T, clock *statetest.Clock) state.Store {
		s, err := state.Open(t.TempDir(), state.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("FileToEtcd", func(t *testing.T) { statetest.RunCopy(t, file, opener(c)) })
	t.Run("EtcdToFile", func(t *testing.T) { statetest.RunCopy(t, opener(c), file) })
}
