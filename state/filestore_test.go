package state_test

import (
	"testing"

	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/statetest"
)

func TestFileStoreConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store {
		s, err := state.Open(t.TempDir(), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
