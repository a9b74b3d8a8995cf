//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"path/filepath"
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
		{"kandev-exec session stop S", func() { e.run("session", "stop", l.Session.ID) }},
	} {
		if c.what != "kandev-exec session stop S" {
			c.run() // warm
		}
		f.relay.Trace()
		c.run()
		fl := f.relay.Flights()
		up := 0
		for _, x := range fl {
			if x.Up {
				up++
			}
		}
		fmt.Printf("\n%s: %d flights, %d up\n%s", c.what, len(fl), up, sshtest.FormatFlights(fl))
	}
}
