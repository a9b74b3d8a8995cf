package cmd

import (
	"os"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// stalls holds each transcript's stalled servers, by name.
var stalls sync.Map // stallKey -> *sshtest.Stall

type stallKey struct {
	ts   *testscript.TestScript
	name string
}

// stallhttp NAME: serve a repository URL ($NAME_URL) that accepts every
// connection and never answers, so a proof fetching it waits; the file
// $WORK/NAME.asked appears at its first connection, so a transcript can
// wait for it and act while the proof waits. `unstall NAME` drops every
// connection, so the fetch fails.
func (fx *fixture) cmdStallHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stallhttp NAME")
	}
	s := sshtest.NewStall(fx.t)
	asked := ts.MkAbs(args[0] + ".asked")
	done := make(chan struct{})
	go func() {
		select {
		case <-s.Asked():
			_ = os.WriteFile(asked, nil, 0o600)
		case <-done:
		}
	}()
	key := stallKey{ts, args[0]}
	stalls.Store(key, s)
	ts.Defer(func() {
		close(done)
		s.Let()
		stalls.Delete(key)
	})
	ts.Setenv(args[0]+"_URL", "http://"+s.Addr()+"/app.git")
}

func cmdUnstall(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unstall NAME")
	}
	s, ok := stalls.Load(stallKey{ts, args[0]})
	if !ok {
		ts.Fatalf("unstall: no stallhttp %s", args[0])
	}
	s.(*sshtest.Stall).Let()
}
