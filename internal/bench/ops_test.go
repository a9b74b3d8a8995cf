//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchTaskOps: the commands after a launch, each next to the one
// ssh that does its work, in round trips through the relay (25 ms each
// way; rtRounds says how): `task exec T -- true` against `ssh host 'cd
// DIR && true'`, `session show`, `session logs` (also --tail and -f of an
// ended session) and `session stop` against `ssh host cat FILE` and `ssh
// host kill PID`, and `task archive` of a clean task
// (drain, cleanup script, reclaim) against one ssh doing kill, git status
// and rm -rf.
func TestBenchTaskOps(t *testing.T) {
	f := newFixture(t)
	e := f.env
	ssh := func(h, script string) string { return sh(t, fmt.Sprintf("ssh -F %s %s '%s'", f.cfg, h, script)) }
	type launched struct {
		Task    struct{ ID string } `json:"task"`
		Session struct{ ID string } `json:"session"`
	}
	launch := func(profile string, cmd ...string) launched {
		var res launched
		out := e.run(append([]string{"task", "launch", "--profile", profile, "--json", "--"}, cmd...)...)
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Task.ID == "" {
			t.Fatalf("task launch: %v\n%s", err, out)
		}
		return res
	}
	newest := func(task string) string {
		var ss []struct{ ID string }
		json.Unmarshal([]byte(e.run("session", "ls", "--task", task, "--json")), &ss)
		return ss[0].ID
	}
	// Everything runs on the relayed host: rtRounds times each command
	// there with and without the delay. A second profile lets archive
	// reclaim the directory.
	h := relayed
	prof := filepath.Join(e.work, "a"+h+".yaml")
	os.WriteFile(prof, []byte(fmt.Sprintf("name: a%s\nhost: %s\nworkdir_root: %s\nreclaim_task_dir: true\nrepositories:\n  - name: app\n    url: %s/app.git\n    branch: main\n",
		h, h, e.root(h), e.work)), 0o600)
	e.run("profile", "apply", "-f", prof)
	// One task runs a session throughout; another has its sessions
	// resumed and stopped (one runs at a time).
	task, dir, session, stopTask := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	l := launch(h, "sleep", "3600")
	task[h], session[h] = l.Task.ID, l.Session.ID
	dir[h] = filepath.Join(e.root(h), "tasks", l.Task.ID)
	t.Cleanup(func() { e.run("session", "stop", session[h]) })
	l = launch(h, "true")
	stopTask[h] = l.Task.ID
	e.run("session", "logs", "-f", l.Session.ID)
	ended := l.Session.ID // its controller lingers to answer -f
	stopping, pid, archived, copyDir := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	copies := 0
	variants := []rtVariant{
		{run: func(h string) { e.run("task", "exec", task[h], "--", "true") }},
		{run: func(h string) { ssh(h, "cd "+dir[h]+" && true") }},
		{run: func(h string) { e.run("session", "show", session[h]) }},
		{run: func(h string) { e.run("session", "logs", session[h]) }},
		{run: func(h string) { ssh(h, "cat "+dir[h]+"/.git/HEAD") }},
		{before: func(h string) {
			e.run("task", "resume", stopTask[h], "--", "sleep", "3600")
			stopping[h] = newest(stopTask[h])
		}, run: func(h string) { e.run("session", "stop", stopping[h]) }},
		{before: func(h string) {
			pid[h] = strings.TrimSpace(ssh(h, "nohup sleep 3600 >/dev/null 2>&1 </dev/null & echo $!"))
		}, run: func(h string) { ssh(h, "kill "+pid[h]) }},
		{before: func(h string) {
			l := launch("a"+h, "true")
			archived[h] = l.Task.ID
			e.run("session", "logs", "-f", l.Session.ID) // until the agent exits: a clean task
		}, run: func(h string) {
			e.run("task", "archive", archived[h], "--yes")
			if _, err := os.Lstat(filepath.Join(e.root(h), "tasks", archived[h])); err == nil {
				t.Fatalf("task archive left %s's directory", archived[h])
			}
		}},
		{before: func(h string) {
			copies++
			copyDir[h] = filepath.Join(e.work, "copies", fmt.Sprint(copies))
			pid[h] = strings.TrimSpace(ssh(h, "mkdir -p "+filepath.Dir(copyDir[h])+" && cp -a "+dir[h]+" "+copyDir[h]+
				" && { nohup sleep 3600 >/dev/null 2>&1 </dev/null & echo $!; }"))
		}, run: func(h string) {
			ssh(h, "kill "+pid[h]+"; git -C "+copyDir[h]+" status --porcelain >/dev/null && rm -rf "+copyDir[h])
		}},
		{run: func(h string) { e.run("session", "logs", "--tail", "5", session[h]) }},
		{run: func(h string) { e.run("session", "logs", "-f", ended) }},
	}
	rtRounds(f.relay, 1, variants) // warm: every command has run once
	const n = 15
	r := rtRounds(f.relay, n, variants)
	exec, execBase, show, logs, catBase, stop, killBase, archive, archiveBase := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]
	tail, follow := r[9], r[10]

	fmt.Printf("\ntask and session operations, medians of %d rounds, RTT %s added by the relay\n", n, 2*oneWay)
	fmt.Printf("%-40s %14s %12s %12s\n", "", "+25ms/way", "round trips", "(fastest)")
	for _, row := range []struct {
		what string
		r    rtResult
	}{{"kandev-exec task exec T -- true", exec}, {"ssh host 'cd DIR && true'", execBase},
		{"kandev-exec session show S", show}, {"kandev-exec session logs S", logs},
		{"kandev-exec session logs --tail 5 S", tail}, {"kandev-exec session logs -f S (ended)", follow}, {"ssh host cat FILE", catBase},
		{"kandev-exec session stop S", stop}, {"ssh host kill PID", killBase},
		{"kandev-exec task archive T (clean)", archive}, {"ssh host 'kill; git status; rm -rf'", archiveBase}} {
		fmt.Printf("%-40s %11.0f ms %12.1f %12.1f\n", row.what, float64(row.r.delayed.Milliseconds()), row.r.rt, row.r.fastest)
	}

	floorRow := func(what string, k rtResult, baseWhat string, b rtResult) {
		addRow(t, what, k.rts(), baseWhat, b.rts(), fmt.Sprintf("%+.1f RT", k.rt-b.rt), "<= floor + 1", yesNo(k.rt <= b.rt+1))
	}
	floorRow("task exec T -- true", exec, "ssh host 'cd DIR && true'", execBase)
	floorRow("session show S", show, "ssh host cat FILE", catBase)
	floorRow("session logs S", logs, "ssh host cat FILE", catBase)
	floorRow("session logs --tail 5 S", tail, "ssh host cat FILE", catBase)
	floorRow("session logs -f S (ended)", follow, "ssh host cat FILE", catBase)
	floorRow("session stop S", stop, "ssh host kill PID", killBase)
	ratio := float64(archive.delayed) / float64(archiveBase.delayed)
	addRow(t, "task archive, clean task", fmt.Sprintf("%d ms, %.1f RT", archive.delayed.Milliseconds(), archive.rt),
		"one ssh: kill, git status, rm -rf", fmt.Sprintf("%d ms, %.1f RT", archiveBase.delayed.Milliseconds(), archiveBase.rt),
		fmt.Sprintf("%.2fx", ratio), "<= 2x", yesNo(ratio <= 2))
}
