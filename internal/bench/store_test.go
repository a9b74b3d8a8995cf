//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// storeBackend opens a fresh store of one backend, and says how the CLI
// reaches that same store (its environment).
type storeBackend struct {
	name string
	open func(t *testing.T) (state.Store, []string)
}

// TestStoreBench: the file store beside a one-member etcd on loopback:
// record writes and lists at 100 and 10,000 records, a claim's
// acquire-checkpoint-release cycle, and how long a journal follower
// takes to see a write. Figures only; nothing is asserted about speed.
func TestStoreBench(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := 0
	backends := []storeBackend{
		{"file", func(t *testing.T) (state.Store, []string) {
			dir := t.TempDir()
			s, err := state.Open(dir, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, []string{"KANDEV_EXEC_STATE_DIR=" + dir}
		}},
		{"etcd (1 member)", func(t *testing.T) (state.Store, []string) {
			n++
			prefix := fmt.Sprintf("/bench/%d", n)
			s, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: c.Endpoints(), Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, []string{"KANDEV_EXEC_STATE_DIR=" + t.TempDir(),
				"KANDEV_EXEC_STORE=etcd://" + strings.Join(c.Endpoints(), ",") + prefix}
		}},
	}
	ctx := context.Background()
	fmt.Printf("\nstate store: the file store (baseline) beside a one-member etcd on loopback (%s); medians unless said\n", etcdVersion(t, c))
	fmt.Printf("%-44s %14s %14s\n", "", backends[0].name, backends[1].name)
	row := func(what string, f func(b storeBackend) string) {
		fmt.Printf("%-44s %14s %14s\n", what, f(backends[0]), f(backends[1]))
	}
	bin := buildCLI(t)
	stores := map[string]state.Store{}
	cliEnv := map[string][]string{}
	for _, b := range backends {
		stores[b.name], cliEnv[b.name] = b.open(t)
	}
	for _, size := range []int{100, 10000} {
		row(fmt.Sprintf("create, mean over growing to %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			have, _ := s.List(ctx, "task")
			start := time.Now()
			for i := len(have); i < size; i++ {
				if _, err := s.Create(ctx, "task", fmt.Sprintf("t%05d", i), taskData(i), state.Event{Type: "task.added"}); err != nil {
					t.Fatal(err)
				}
			}
			return dur(time.Since(start) / time.Duration(size-len(have)))
		})
		row(fmt.Sprintf("update one record, at %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			return dur(timeIt(50, nil, func() {
				r, err := s.Get(ctx, "task", "t00007")
				if err == nil {
					_, err = s.Update(ctx, "task", "t00007", r.Revision, taskData(7), state.Event{Type: "task.phase"})
				}
				if err != nil {
					t.Fatal(err)
				}
			}))
		})
		row(fmt.Sprintf("list (task ls), %d records", size), func(b storeBackend) string {
			s := stores[b.name]
			runs := 20
			if size > 1000 {
				runs = 5
			}
			return dur(timeIt(runs, nil, func() {
				recs, err := s.List(ctx, "task")
				if err != nil || len(recs) != size {
					t.Fatalf("List = %d records, %v", len(recs), err)
				}
			}))
		})
		row(fmt.Sprintf("kandev-exec task ls --json, %d tasks", size), func(b storeBackend) string {
			runs := 10
			if size > 1000 {
				runs = 3
			}
			return dur(timeIt(runs, nil, func() {
				out, _ := runCLI(t, bin, cliEnv[b.name], "task", "ls", "--json", "--limit", "0")
				if got := strings.Count(out, `"id":`); got != size {
					t.Fatalf("task ls --json printed %d tasks, want %d", got, size)
				}
			}))
		})
	}
	row("claim: acquire, checkpoint, release", func(b storeBackend) string {
		s, _ := b.open(t)
		if _, err := s.Create(ctx, "job", "j", json.RawMessage(`{}`), state.Event{Type: "job.added"}); err != nil {
			t.Fatal(err)
		}
		return dur(timeIt(50, nil, func() {
			r, err := s.Get(ctx, "job", "j")
			if err != nil {
				t.Fatal(err)
			}
			cl, err := s.AcquireClaim(ctx, "job", "j", time.Minute)
			if err == nil {
				cl, _, err = s.Checkpoint(ctx, cl, 1, r.Revision, taskData(r.Revision), state.Event{Type: "job.phase"})
			}
			if err == nil {
				err = s.ReleaseClaim(ctx, cl)
			}
			if err != nil {
				t.Fatal(err)
			}
		}))
	})
	row("journal follow: write start to follower", func(b storeBackend) string {
		s, _ := b.open(t)
		return dur(followLatency(t, s, 50))
	})
	row("write to `watch --json` printing it", func(b storeBackend) string {
		s, env := b.open(t)
		return dur(watchLatency(t, bin, env, s, 20))
	})
	fmt.Println("the file store's follower polls every 50 ms; etcd's watches the journal counter")
}

func etcdVersion(t *testing.T, c *etcdtest.Cluster) string {
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	st, err := cli.Status(context.Background(), c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return "etcd " + st.Version
}

// followLatency is the median time from the start of a write to a
// follower, already waiting, receiving its entry.
func followLatency(t *testing.T, s state.Store, n int) time.Duration {
	ctx := context.Background()
	epoch, err := s.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan time.Time)
	go func() {
		defer close(seen)
		var after uint64
		for after < uint64(n) {
			es, err := s.Follow(ctx, epoch, after)
			if err != nil {
				t.Error(err)
				return
			}
			now := time.Now()
			for range es {
				seen <- now
			}
			after = es[len(es)-1].Seq
		}
	}()
	var ds []time.Duration
	for i := range n {
		// Let the follower settle into waiting: the figure is a wait's.
		time.Sleep(5 * time.Millisecond)
		start := time.Now()
		if _, err := s.Create(ctx, "follow", fmt.Sprintf("f%d", i), json.RawMessage(`{}`), state.Event{Type: "follow.added"}); err != nil {
			t.Fatal(err)
		}
		at, ok := <-seen
		if !ok {
			t.Fatal("the follower stopped")
		}
		ds = append(ds, at.Sub(start))
	}
	return median(ds)
}

// taskData is a task record of a few hundred bytes, as a launch leaves
// one: what `task ls` reads and prints.
func taskData(i any) json.RawMessage {
	return fmt.Appendf(nil, `{"id":"t%05v","name":"task-%v","host":"prod","profile":"default","agent":"claude","workdir_root":"~/.kandev","task_dir_name":"t%05v","branch":"kandev/t%05v","base_branch":"main","command":"claude -p %0100d","phase":"ready","created_at":"2026-11-30T12:00:00Z","sessions":[]}`, i, i, i, i, 0)
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// watchLatency is the median time from the start of a write to a running
// `watch --json` printing its line: the store's follow, the decode and
// the print together, as a script reading the stream sees it.
func watchLatency(t *testing.T, bin string, env []string, s state.Store, n int) time.Duration {
	ctx := context.Background()
	cmd := exec.Command(bin, "watch", "--json", "--since", "0")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	write := func(i int) {
		if _, err := s.Create(ctx, "follow", fmt.Sprintf("w%d", i), json.RawMessage(`{}`), state.Event{Type: "follow.added"}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf(`"name":"w%d"`, i)
		for lines.Scan() {
			if strings.Contains(lines.Text(), name) {
				return
			}
		}
		t.Fatalf("watch --json ended before printing %s: %v\n%s", name, lines.Err(), errb.String())
	}
	// The first write waits for the stream to start (it replays the
	// store's journal from the start): not timed.
	write(-1)
	var ds []time.Duration
	for i := range n {
		time.Sleep(5 * time.Millisecond) // a follower already waiting, as in followLatency
		start := time.Now()
		write(i)
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}
