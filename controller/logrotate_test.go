package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Positions in a growing log: each read from where the last one reached
// gets exactly the rest; once the log rotates, a read of the old
// generation is refused, and a follower goes on across it with nothing
// lost or repeated.
func TestLogPositionsAcrossRotation(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `i=0
lines() { n=$1; while [ $n -gt 0 ]; do echo "line $i"; i=$((i+1)); n=$((n-1)); done; }
lines 20; while [ ! -e go1 ]; do sleep 0.05; done
lines 20; while [ ! -e go2 ]; do sleep 0.05; done
b=0; while [ $b -lt 60 ]; do lines 25; b=$((b+1)); sleep 0.1; done
while [ ! -e go3 ]; do sleep 0.05; done`)
	s, _ := inProcess(t, req, func(s *server) { s.rotateAt, s.logKeep = 4096, 2048 })
	c := NewClient(nil, s.status().Port, req.Token)
	ctx := ctxFor(t, time.Minute)
	waitFor(t, 10*time.Second, "the first lines", func() bool { return strings.Contains(readFile(t, req), "line 19\n") })

	var first bytes.Buffer
	p1, err := c.LogsFrom(ctx, LogPos{}, false, &first, nil)
	if err != nil || p1.Generation == "" || p1.Offset != int64(first.Len()) {
		t.Fatalf("first read: %+v %v (%d bytes)", p1, err, first.Len())
	}
	if g, err := ReadGeneration(req.SessionDir); err != nil || g != p1.Generation || !strings.HasPrefix(g, "1-") {
		t.Fatalf("generation file %q %v, the read said %q", g, err, p1.Generation)
	}
	touch(t, filepath.Join(req.TaskDir, "go1"))
	waitFor(t, 10*time.Second, "more lines", func() bool { return strings.Contains(readFile(t, req), "line 39\n") })
	var second bytes.Buffer
	p2, err := c.LogsFrom(ctx, p1, false, &second, nil)
	if err != nil || p2.Generation != p1.Generation || p2.Offset != p1.Offset+int64(second.Len()) {
		t.Fatalf("second read: %+v %v", p2, err)
	}
	if whole := readFile(t, req); first.String()+second.String() != whole[:p2.Offset] || !strings.HasPrefix(second.String(), "line 20\n") {
		t.Fatalf("the reads do not make up the log: %q + %q", first.String(), second.String())
	}

	// A follower from there, then the output that rotates the log.
	var followed bytes.Buffer
	done := make(chan LogPos, 1)
	go func() {
		p, err := c.LogsFrom(ctx, p2, true, &followed, nil)
		if err != nil {
			t.Errorf("follow: %v", err)
		}
		done <- p
	}()
	touch(t, filepath.Join(req.TaskDir, "go2"))
	waitFor(t, 20*time.Second, "the last line", func() bool { return strings.Contains(readFile(t, req), "line 1539\n") })
	_, err = c.LogsFrom(ctx, p2, false, &bytes.Buffer{}, nil)
	var ge *GenerationError
	if !errors.As(err, &ge) || ge.Want != p1.Generation || ge.Have == p1.Generation || generationNumber(ge.Have) < 2 {
		t.Fatalf("read of a rotated generation: %v, want a GenerationError naming both", err)
	}
	if st := s.status(); st.LogGeneration != ge.Have || st.LogBytes > 4096+1024 {
		t.Fatalf("status: generation %q, %d bytes; want %q, bounded", st.LogGeneration, st.LogBytes, ge.Have)
	}
	if log := readFile(t, req); !strings.Contains(log, "log rotated at ") {
		t.Fatalf("the log does not say it rotated:\n%s", log)
	}
	touch(t, filepath.Join(req.TaskDir, "go3"))
	var end LogPos
	select {
	case end = <-done:
	case <-ctx.Done():
		t.Fatal("follow did not end with the agent")
	}
	if end.Generation == p1.Generation || end.Offset != int64(len(readFile(t, req))) {
		t.Fatalf("follow ended at %+v; the log is %s, %d bytes", end, s.status().LogGeneration, len(readFile(t, req)))
	}
	// Every line once, in order: nothing lost or repeated at a rotation
	// (the output is paced: a follower more than a generation behind
	// loses what lay between).
	want := 40
	for _, l := range strings.Split(followed.String(), "\n") {
		if !strings.HasPrefix(l, "line ") {
			continue
		}
		if l != fmt.Sprintf("line %d", want) {
			t.Fatalf("followed %q where line %d was due", l, want)
		}
		want++
	}
	if want != 1540 {
		t.Fatalf("followed up to line %d, want 1539", want-1)
	}
}

// An offset past the end of the log is refused, naming the generation.
func TestLogOffsetPastTheEnd(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo hi; sleep 30"))
	ctx := ctxFor(t, 10*time.Second)
	p, err := s.c.LogsFrom(ctx, LogPos{}, false, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.c.LogsFrom(context.Background(), LogPos{Generation: p.Generation, Offset: p.Offset + 1000}, false, &bytes.Buffer{}, nil)
	var oe *OffsetError
	if !errors.As(err, &oe) || oe.Generation != p.Generation || oe.Offset != p.Offset+1000 {
		t.Fatalf("offset past the end: %v, want an OffsetError of generation %s", err, p.Generation)
	}
}

func readFile(t *testing.T, req StartRequest) string {
	t.Helper()
	return readLog(t, &session{req: req})
}
