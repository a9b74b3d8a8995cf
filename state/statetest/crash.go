package statetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// CrashTarget is a backend's crash-atomicity harness: writer processes
// killed with SIGKILL at random points of a write stream, then every
// record and journal entry checked.
type CrashTarget struct {
	// Open opens the store the writers write to (the same one each call).
	Open func(t *testing.T) state.Store
	// Writer returns a process (not started) that runs WriteLoop on that
	// store, printing to its stdout.
	Writer func(t *testing.T) *exec.Cmd
	// Lag is how many writes one killed writer may leave without their
	// journal entry: 0 where a write and its entry land as one.
	Lag int
	// Rounds is how many writers are killed (default 6).
	Rounds int
}

// crashed is what WriteLoop's records hold; the padding makes a write
// large enough to be caught half done.
type crashed struct {
	Rev uint64 `json:"rev"`
	Pad string `json:"pad"`
}

func crashData(rev uint64, pad int) json.RawMessage {
	b, _ := json.Marshal(crashed{Rev: rev, Pad: strings.Repeat("x", pad)})
	return b
}

// WriteLoop writes until killed, printing a line after each write:
// creates, updates, deletes and claimed checkpoints on a handful of
// records, each record's data naming the revision it is written at. A
// record claimed by an earlier (killed) writer is left alone until its
// claim expires.
func WriteLoop(ctx context.Context, s state.Store, out io.Writer) error {
	ev := state.Event{Type: "widget.changed"}
	for i := 0; ; i++ {
		name := fmt.Sprintf("r%d", i%4)
		r, err := s.Get(ctx, kind, name)
		switch {
		case errors.Is(err, state.ErrNotFound):
			_, err = s.Create(ctx, kind, name, crashData(1, 10), state.Event{Type: "widget.added"})
		case err != nil:
		case i%11 == 0:
			err = s.Delete(ctx, kind, name, r.Revision, state.Event{Type: "widget.removed"})
		case i%7 == 0:
			err = checkpointOnce(ctx, s, r)
		default:
			_, err = s.Update(ctx, kind, name, r.Revision, crashData(r.Revision+1, 1000+i%5*30000), ev)
		}
		var claimed *state.ClaimedError
		if errors.As(err, &claimed) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "wrote", i)
	}
}

func checkpointOnce(ctx context.Context, s state.Store, r state.Record) error {
	c, err := s.AcquireClaim(ctx, kind, r.Name, 2*time.Second)
	if err != nil {
		return err
	}
	if _, _, err := s.Checkpoint(ctx, c, 1, r.Revision, crashData(r.Revision+1, 5000), state.Event{Type: "widget.phase"}); err != nil {
		return err
	}
	return s.ReleaseClaim(ctx, c)
}

// RunCrash kills writers mid-stream and checks the store after each.
func RunCrash(t *testing.T, c CrashTarget) {
	rounds := c.Rounds
	if rounds == 0 {
		rounds = 6
	}
	for round := range rounds {
		cmd := c.Writer(t)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		for range 5 + rand.IntN(60) {
			if !lines.Scan() {
				cmd.Wait()
				t.Fatalf("round %d: writer exited before it was killed: %v", round, cmd.ProcessState)
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait() // reap, so the pid is really gone
		checkAfterCrash(t, c.Open(t), c.Lag*(round+1), round)
	}
	// Writes carry on from where the killed writers stopped.
	s := c.Open(t)
	ctx := context.Background()
	before := journal(t, s, 0)
	if _, err := s.Create(ctx, kind, "after", data(`{}`), ev("widget.added")); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, journal(t, s, 0), len(before)+1)
}

// checkAfterCrash: every record whole and at the revision its data names,
// the journal numbered without gaps, and each record where its last entry
// says, except for at most lag records one write ahead of the journal.
func checkAfterCrash(t *testing.T, s state.Store, lag, round int) {
	t.Helper()
	ctx := context.Background()
	recs, err := s.List(ctx, kind)
	if err != nil {
		t.Fatalf("round %d: List: %v", round, err)
	}
	es := journal(t, s, 0)
	if len(es) > 0 {
		checkContiguous(t, es, len(es))
	}
	type last struct {
		rev     uint64
		removed bool
	}
	journaled := map[string]last{}
	for _, e := range es {
		journaled[e.Name] = last{e.Revision, e.Type == "widget.removed"}
	}
	stored := map[string]uint64{}
	for _, r := range recs {
		var v crashed
		if err := json.Unmarshal(r.Data, &v); err != nil || v.Rev != r.Revision {
			t.Fatalf("round %d: record %s at revision %d holds %.40s (half-applied?)", round, r.Name, r.Revision, r.Data)
		}
		stored[r.Name] = r.Revision
	}
	ahead := 0
	for i := range 4 {
		name := fmt.Sprintf("r%d", i)
		rev, exists := stored[name]
		j, seen := journaled[name]
		switch {
		case exists && seen && !j.removed && j.rev == rev, !exists && (!seen || j.removed):
			// as the journal says
		case exists && (seen && !j.removed && j.rev+1 == rev || rev == 1 && (!seen || j.removed)),
			!exists && seen && !j.removed:
			ahead++ // the write the kill interrupted, not yet journaled
		default:
			t.Fatalf("round %d: record %s stored %v at revision %d, journal says %+v", round, name, exists, rev, j)
		}
	}
	if ahead > lag {
		t.Fatalf("round %d: %d records ahead of the journal, at most %d allowed", round, ahead, lag)
	}
}
