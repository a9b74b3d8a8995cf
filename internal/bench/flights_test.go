//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// TestBenchFlights prints every flight (a run of bytes one way through
// the relay, 25 ms each way) of `ssh host cat FILE`, `task exec`, and
// `session show`, `logs` and `stop`, once each after a warm run: where
// each command's round trips go, next to the floor's. Its upward flights
// are its round trips; the relay does not delay TCP's handshake.
func TestBenchFlights(t *testing.T) {
	f := newFixture(t)
	e := f.env
	h := relayed
	var l struct {
		Task    struct{ ID string } `json:"task"`
		Session struct{ ID string } `json:"session"`
	}
	out := e.run("task", "launch", "--profile", h, "--json", "--", "sleep", "3600")
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Session.ID == "" {
		t.Fatalf("task launch: %v\n%s", err, out)
	}
	t.Cleanup(func() { e.run("session", "stop", l.Session.ID) })
	// An ended session's -f ends at once; its controller lingers to answer.
	var ended struct {
		Session struct{ ID string } `json:"session"`
	}
	out = e.run("task", "launch", "--profile", h, "--json", "--", "seq", "100")
	if err := json.Unmarshal([]byte(out), &ended); err != nil || ended.Session.ID == "" {
		t.Fatalf("task launch: %v\n%s", err, out)
	}
	dir := filepath.Join(e.root(h), "tasks", l.Task.ID)
	f.relay.Delay(oneWay)
	defer f.relay.Delay(0)
	for _, c := range []struct {
		what string
		run  func()
	}{
		{"ssh host cat FILE", func() { sh(t, fmt.Sprintf("ssh -F %s %s 'cat %s/.git/HEAD'", f.cfg, h, dir)) }},
		{"kandev-exec task exec T -- true", func() { e.run("task", "exec", l.Task.ID, "--", "true") }},
		{"kandev-exec session show S", func() { e.run("session", "show", l.Session.ID) }},
		{"kandev-exec session logs S", func() { e.run("session", "logs", l.Session.ID) }},
		{"kandev-exec session logs --tail 5 S", func() { e.run("session", "logs", "--tail", "5", l.Session.ID) }},
		{"kandev-exec session logs -f S (ended)", func() { e.run("session", "logs", "-f", ended.Session.ID) }},
		{"kandev-exec session stop S", func() { e.run("session", "stop", l.Session.ID) }},
	} {
		if c.what != "kandev-exec session stop S" {
			c.run() // warm
		}
		traced(f.relay, c.what, c.run)
	}
	// A launch under a root the helper was never put in: the cold path.
	prof := filepath.Join(e.work, "cold.yaml")
	os.WriteFile(prof, []byte(fmt.Sprintf("name: cold\nhost: %s\nworkdir_root: %s\nrepositories:\n  - name: app\n    url: %s/app.git\n    branch: main\n",
		h, filepath.Join(e.work, "remote-cold"), e.work)), 0o600)
	e.run("profile", "apply", "-f", prof)
	traced(f.relay, "kandev-exec task launch, cold (no helper under the root)", func() { e.run("task", "launch", "--profile", "cold", "--", "true") })
}

// TestBenchReclaimFlights prints every flight of `reclaim --apply --yes`
// of 10 clean directories through the relay, after a warm run, next to
// `ssh host rm -rf` of the same directories: where reclaim's round trips
// go (connection setup, the listing, the apply, anything else).
func TestBenchReclaimFlights(t *testing.T) {
	f := newFixture(t, sshtest.WithLoginUser())
	f.ownRoots(t)
	e, h := f.env, relayed
	var res struct {
		Task struct{ ID string } `json:"task"`
	}
	json.Unmarshal([]byte(e.run("task", "launch", "--profile", h, "--follow", "--json", "--", "true")), &res)
	template := filepath.Join(e.root(h), "tasks", res.Task.ID)
	f.relay.Delay(oneWay)
	defer f.relay.Delay(0)
	var dirs []string
	reclaim := func() { e.run("reclaim", "--host", h, "--apply", "--yes", "--json") }
	for _, c := range []struct {
		what string
		run  func()
		// young: changed now, so the listing leaves them to the apply's
		// own request (reclaim.ListedMinAge).
		young bool
	}{
		{"ssh host rm -rf, 10 dirs", func() { sh(t, fmt.Sprintf("ssh -F %s %s rm -rf %s", f.cfg, h, strings.Join(dirs, " "))) }, false},
		{"kandev-exec reclaim --apply --yes, 10 dirs", reclaim, false},
		{"kandev-exec reclaim --apply --yes, 10 young dirs (the apply's request)", reclaim, true},
	} {
		lay := func() {
			dirs = orphans(t, template, e.root(h), 10)
			if c.young {
				sh(t, fmt.Sprintf("find %s -exec touch -h {} +", strings.Join(dirs, " ")))
			}
		}
		lay()
		c.run() // warm
		lay()
		traced(f.relay, c.what, c.run)
	}
}

// traced prints the flights of run through relay.
func traced(relay *sshtest.Relay, what string, run func()) {
	relay.Trace()
	run()
	fl := relay.Flights()
	up := 0
	for _, x := range fl {
		if x.Up {
			up++
		}
	}
	fmt.Printf("\n%s: %d flights, %d up\n%s", what, len(fl), up, sshtest.FormatFlights(fl))
}

// answered counts the upward flights a downward one follows: the round
// trips a command waited for.
func answered(fl []sshtest.Flight) int {
	n := 0
	for i := 1; i < len(fl); i++ {
		if fl[i-1].Up && !fl[i].Up {
			n++
		}
	}
	return n
}
