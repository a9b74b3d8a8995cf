package executor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// gateWait bounds how long a gate waits for the processes it expects to
// meet there: far longer than any of them takes to get there on a loaded
// machine, and only ever spent in full when they do not run at once.
const gateWait = 2 * time.Minute

// gate proves processes run at the same time: each one that reaches it
// (a shell snippet in a wrapper script) says so on one fifo and blocks
// reading the other, until the test has seen enough of them there at
// once. From then on the gate is open: every process, held or later,
// passes through.
type gate struct {
	arrive, release *os.File
	arrived         chan string
	mu              sync.Mutex
	open            bool
	held            int // arrived, not yet let through
}

func newGate(t *testing.T) *gate {
	t.Helper()
	dir := t.TempDir()
	g := &gate{arrived: make(chan string, 64)}
	for _, p := range []struct {
		name string
		f    **os.File
	}{{"arrive", &g.arrive}, {"release", &g.release}} {
		path := filepath.Join(dir, p.name)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		// Read and write: opening never waits for the other end, and a
		// process opening it finds this end already there.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		*p.f = f
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(g.arrive)
		for sc.Scan() {
			g.mu.Lock()
			g.held++
			if g.open {
				g.letThrough()
			}
			g.mu.Unlock()
			select {
			case g.arrived <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		g.mu.Lock()
		g.open = true
		g.letThrough()
		g.mu.Unlock()
		g.arrive.Close()
		<-done
		g.release.Close()
	})
	return g
}

// letThrough releases every held process; g.mu is held.
func (g *gate) letThrough() {
	for ; g.held > 0; g.held-- {
		fmt.Fprintln(g.release)
	}
}

// shell is the snippet a wrapper script runs to pass the gate, saying who
// it is with the shell word name.
func (g *gate) shell(name string) string {
	return fmt.Sprintf("printf '%%s\\n' %s >%s\nread -r _ <%s\n", name, shquote.Quote(g.arrive.Name()), shquote.Quote(g.release.Name()))
}

// together waits, at most gateWait, until n processes are held at the
// gate at once, then opens it for good. It returns who arrived while it
// waited: fewer than n when they came one at a time.
func (g *gate) together(n int) []string {
	ctx, cancel := context.WithTimeout(context.Background(), gateWait)
	defer cancel()
	var who []string
wait:
	for len(who) < n {
		select {
		case name := <-g.arrived:
			who = append(who, name)
		case <-ctx.Done():
			break wait
		}
	}
	g.mu.Lock()
	g.open = true
	g.letThrough()
	g.mu.Unlock()
	return who
}
