package state_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/statetest"
)

func openFile(t *testing.T, clock *statetest.Clock) state.Store {
	s, err := state.Open(t.TempDir(), state.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFileStoreConformance(t *testing.T) { statetest.Run(t, openFile) }

func TestFileStoreCopier(t *testing.T) { statetest.RunCopier(t, openFile) }

// crashWriterEnv selects TestCrashWriterProcess in a re-run of this test
// binary and names the store directory it writes to.
const crashWriterEnv = "KANDEV_STATE_CRASH_WRITER"

// TestFileStoreCrash: writers killed at random points leave no torn
// record and no gap in the journal, which may lag by the one write each
// kill interrupted (the entry is appended after the record is renamed).
func TestFileStoreCrash(t *testing.T) {
	dir := t.TempDir()
	statetest.RunCrash(t, statetest.CrashTarget{
		Open: func(t *testing.T) state.Store {
			s, err := state.Open(dir, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Writer: func(*testing.T) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
			cmd.Stderr = os.Stderr
			return cmd
		},
		Lag: 1,
	})
}

// TestCrashWriterProcess is the writer TestFileStoreCrash kills; it does
// nothing in a normal run.
func TestCrashWriterProcess(t *testing.T) {
	dir := os.Getenv(crashWriterEnv)
	if dir == "" {
		t.Skip("the writer process of TestFileStoreCrash")
	}
	s, err := state.Open(dir, state.Options{})
	if err == nil {
		err = statetest.WriteLoop(context.Background(), s, os.Stdout)
	}
	fmt.Fprintln(os.Stderr, "writer:", err)
	os.Exit(1)
}
