package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// operatorEnv is one operator's machine (its own state dir, so its own
// secret vault and tokens) on the shared store.
func operatorEnv(t *testing.T, store string) []string {
	t.Helper()
	work := t.TempDir()
	cfg := filepath.Join(work, "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "HOME="+work, "KANDEV_EXEC_STATE_DIR="+filepath.Join(work, "state"),
		"KANDEV_EXEC_SSH_CONFIG="+cfg, "KANDEV_EXEC_STORE="+store, "KANDEV_EXEC_STORE_TIMEOUT=10s",
		"SSH_AUTH_SOCK=", "NO_COLOR=1")
}

// write is one kandev-exec process a writer ran, and how it ended.
type write struct {
	args   []string
	name   string // the host it adds, or the user it sets on "shared"
	add    bool
	code   int
	stderr string
}

func (w *write) run(bin string, env []string) {
	cmd := exec.Command(bin, w.args...)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		w.code = ee.ExitCode()
	default:
		w.code = -1
		errb.WriteString(err.Error())
	}
	w.stderr = errb.String()
}

// Two operators on one three-member etcd, 16 kandev-exec processes
// adding hosts and changing one shared host at once while the leader is
// killed: every process ends with 0 or a documented code (7 unreachable,
// 10 conflict, 11 locked), a failed one changed nothing, each one that
// succeeded changed the store once (no lost update), and the journal's
// sequence has neither a gap nor a duplicate.
func TestLeaderKilledDuringOperatorsWrites(t *testing.T) {
	bin, err := exec.LookPath("kandev-exec") // the test binary, as TestMain set it up
	if err != nil {
		t.Fatal(err)
	}
	c := etcdtest.Start(t, 3)
	store := "etcd://" + strings.Join(c.Endpoints(), ",") + "/faults"
	ops := [][]string{operatorEnv(t, store), operatorEnv(t, store)}
	setup := &write{args: []string{"host", "add", "shared", "--hostname", "127.0.0.1"}}
	if setup.run(bin, ops[0]); setup.code != 0 {
		t.Fatalf("host add shared: exit %d: %s", setup.code, setup.stderr)
	}
	ctx := context.Background()
	st, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: c.Endpoints(), Prefix: "/faults", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base, err := st.Get(ctx, records.KindHost, "shared")
	if err != nil {
		t.Fatal(err)
	}
	before, err := st.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}

	// Two waves of 8 (4 per operator, half adds, half sets): the leader
	// dies once the first wave's first process has ended, and the second
	// wave starts while the cluster elects another.
	var writes [2][]*write
	for wave := range 2 {
		for op := range ops {
			for i := range 4 {
				w := &write{add: i%2 == 0}
				if w.add {
					w.name = fmt.Sprintf("h-%d-%d-%d", wave, op, i)
					w.args = []string{"host", "add", w.name, "--hostname", "127.0.0.1"}
				} else {
					w.name = fmt.Sprintf("u-%d-%d-%d", wave, op, i)
					w.args = []string{"host", "set", "shared", "--user", w.name}
				}
				writes[wave] = append(writes[wave], w)
			}
		}
	}
	var wg sync.WaitGroup
	ended := make(chan struct{}, len(writes[0])+len(writes[1]))
	start := func(wave int) {
		for i, w := range writes[wave] {
			env := ops[i/4]
			wg.Go(func() {
				w.run(bin, env)
				ended <- struct{}{}
			})
		}
	}
	start(0)
	<-ended
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	leader, err := c.WaitLeader(lctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	start(1)
	wg.Wait()
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}

	all := slices.Concat(writes[0], writes[1])
	codes := map[int]int{}
	var sets []*write
	for _, w := range all {
		codes[w.code]++
		host := "shared"
		if w.add {
			host = w.name
		}
		switch w.code {
		case 0:
		case 7:
			if !strings.Contains(w.stderr, "state store "+store+" unreachable") {
				t.Errorf("kandev-exec %s: exit 7 not naming the store: %s", strings.Join(w.args, " "), w.stderr)
			}
		case 10, 11:
			// A set that lost to another, or a write that kept losing.
			if !strings.Contains(w.stderr, `host "`+host+`"`) {
				t.Errorf("kandev-exec %s: exit %d not naming the host: %s", strings.Join(w.args, " "), w.code, w.stderr)
			}
		default:
			t.Errorf("kandev-exec %s: exit %d, not a documented failure: %s", strings.Join(w.args, " "), w.code, w.stderr)
		}
		if !w.add {
			sets = append(sets, w)
		}
	}
	t.Logf("exit codes of the %d processes: %v", len(all), codes)
	for _, w := range all {
		if w.code != 0 {
			t.Logf("%s: %s", strings.Join(w.args, " "), w.stderr)
		}
	}

	entries, err := st.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Seq != uint64(i+1) || e.Epoch != entries[0].Epoch {
			t.Fatalf("journal entry %d is epoch %d seq %d: a gap or a duplicate", i, e.Epoch, e.Seq)
		}
	}
	after := entries[len(before):]
	for _, w := range all {
		if !w.add {
			continue
		}
		n := 0
		for _, e := range after {
			if e.Kind == records.KindHost && e.Name == w.name {
				n++
			}
		}
		_, gerr := st.Get(ctx, records.KindHost, w.name)
		want := 0 // a failed add left neither the host nor an entry
		if w.code == 0 {
			want = 1
		}
		if landed := gerr == nil; landed != (w.code == 0) || n != want {
			t.Errorf("host add %s: exit %d, stored %v (%v), %d journal entries", w.name, w.code, landed, gerr, n)
		}
	}
	// Each set that succeeded changed the shared host once, and none that
	// failed did: its revision and journal count exactly the successes.
	var ok []string
	for _, w := range sets {
		if w.code == 0 {
			ok = append(ok, w.name)
		}
	}
	shared, err := st.Get(ctx, records.KindHost, "shared")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range after {
		if e.Kind == records.KindHost && e.Name == "shared" {
			n++
		}
	}
	if shared.Revision != base.Revision+uint64(len(ok)) || n != len(ok) {
		t.Fatalf("shared host at revision %d (was %d) with %d journal entries after %d successful sets", shared.Revision, base.Revision, n, len(ok))
	}
	user := ""
	for _, w := range ok {
		if bytes.Contains(shared.Data, []byte(`"user_override":"`+w+`"`)) {
			user = w
		}
	}
	if len(ok) > 0 && user == "" {
		t.Fatalf("the shared host's user is none of the successful sets %v: %s", ok, shared.Data)
	}
}
