//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestBenchReuse: a warm `task exec T -- true` in round trips through
// the relay (25 ms each way), without and with connection reuse (the ssh
// config's ControlMaster auto, ControlPath and ControlPersist, the master
// started by the warm-up round), beside `ssh host true` without and with
// OpenSSH's own ControlMaster and ControlPersist.
func TestBenchReuse(t *testing.T) {
	f := newFixture(t)
	e := f.env
	base, err := os.ReadFile(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The first value read wins: Host * first switches reuse on for both.
	reuseCfg := filepath.Join(e.work, "ssh_config_reuse")
	os.WriteFile(reuseCfg, []byte(fmt.Sprintf("Host *\n  ControlMaster auto\n  ControlPath %s/cm-%%p\n  ControlPersist 600\n%s",
		e.work, base)), 0o600)
	reuse := *e
	reuse.sshCfg = reuseCfg
	task := map[string]string{}
	for _, h := range []string{"direct", "delayed"} {
		var res struct {
			Task struct{ ID string } `json:"task"`
		}
		json.Unmarshal([]byte(e.run("task", "launch", "--profile", h, "--json", "--", "true")), &res)
		task[h] = res.Task.ID
	}
	t.Cleanup(func() {
		for _, h := range []string{"direct", "delayed"} {
			reuse.run("host", "disconnect", h)
			sh(t, fmt.Sprintf("ssh -F %s -O exit %s 2>/dev/null || true", reuseCfg, h))
		}
	})
	variants := []rtVariant{
		{run: func(h string) { e.run("task", "exec", task[h], "--", "true") }},
		{run: func(h string) { reuse.run("task", "exec", task[h], "--", "true") }},
		{run: func(h string) { sh(t, fmt.Sprintf("ssh -F %s %s true", f.cfg, h)) }},
		{run: func(h string) { sh(t, fmt.Sprintf("ssh -F %s %s true", reuseCfg, h)) }},
	}
	rtRounds(f.relay, 1, variants) // warm: the helper found, both kinds of master started
	const n = 7
	f.relay.Delay(oneWay)
	r := rtRounds(f.relay, n, variants)
	exec, execReused, ssh, sshReused := r[0], r[1], r[2], r[3]

	fmt.Printf("\nconnection reuse, medians of %d rounds, RTT %s added by the relay\n", n, 2*oneWay)
	fmt.Printf("%-56s %14s %12s\n", "", "+25ms/way", "round trips")
	for _, row := range []struct {
		what string
		r    rtResult
	}{{"kandev-exec task exec T -- true", exec}, {"kandev-exec task exec T -- true (ControlPersist)", execReused},
		{"ssh host true", ssh}, {"ssh host true (ControlMaster, ControlPersist)", sshReused}} {
		fmt.Printf("%-56s %11.0f ms %12.1f\n", row.what, float64(row.r.delayed.Milliseconds()), row.r.rt)
	}
	addRow(t, "task exec T -- true, connection reused", execReused.rts(), "ssh host true, ControlPersist", sshReused.rts(),
		fmt.Sprintf("%+.1f RT", execReused.rt-sshReused.rt), "<= floor + 1", yesNo(execReused.rt <= sshReused.rt+1))
	addRow(t, "task exec T -- true, reuse vs a new connection", execReused.rts(), "task exec, ControlPersist unset", exec.rts(),
		fmt.Sprintf("%+.1f RT", execReused.rt-exec.rt), "fewer RT", yesNo(execReused.rt < exec.rt))
}
