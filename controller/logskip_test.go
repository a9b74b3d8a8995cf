package controller

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A follower whose log rotates twice before it looks again goes on at
// the start of the current generation, and is told how many generations
// and bytes it lost: all of the one between (nothing is carried on, as
// the log keeps no tail here).
func TestLogFollowerToldWhatRotationSkipped(t *testing.T) {
	t.Parallel()
	req := newRequest(t, `echo first; while [ ! -e go ]; do sleep 0.05; done; echo last`)
	s, _ := inProcess(t, req, func(s *server) { s.rotateAt, s.logKeep = 1<<30, 0 })
	c := NewClient(nil, s.status().Port, req.Token)
	ctx := ctxFor(t, time.Minute)
	waitFor(t, 10*time.Second, "the first line", func() bool { return strings.Contains(readFile(t, req), "first\n") })

	w := &firstWrite{arrived: make(chan struct{})}
	var skips []Skip
	done := make(chan LogPos, 1)
	go func() {
		p, err := c.LogsFrom(ctx, LogPos{}, true, w, func(sk Skip) { skips = append(skips, sk) })
		if err != nil {
			t.Errorf("follow: %v", err)
		}
		done <- p
	}()
	<-w.arrived // following generation 1

	s.logMu.Lock()
	first, gen1 := readFile(t, req), s.logGen
	s.rotateAt = 1
	s.rotateLocked()
	_, _ = s.logw.Write([]byte("lost line\n"))
	between := readFile(t, req)
	s.rotateLocked()
	s.rotateAt = 1 << 30
	gen3 := s.logGen
	s.logMu.Unlock()
	touch(t, filepath.Join(req.TaskDir, "go"))

	end := <-done
	if generationNumber(gen3) != 3 || end.Generation != gen3 {
		t.Fatalf("follow ended in %q; the log is %q", end.Generation, gen3)
	}
	want := []Skip{{From: gen1, To: gen3, Generations: 1, Bytes: int64(len(between))}}
	if len(skips) != 1 || skips[0] != want[0] {
		t.Fatalf("skips %+v, want %+v", skips, want)
	}
	if !strings.Contains(between, "lost line") || strings.Contains(w.String(), "lost line") ||
		w.String() != first+readFile(t, req) {
		t.Fatalf("followed %q; generation 1 was %q, the one between %q, the last %q", w.String(), first, between, readFile(t, req))
	}
}

// firstWrite is a buffer that says when the first bytes arrived.
type firstWrite struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	arrived chan struct{}
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.once.Do(func() { close(f.arrived) })
	return f.buf.Write(p)
}

func (f *firstWrite) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}
