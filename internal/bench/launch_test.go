//go:build bench

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

const oneWay = 25 * time.Millisecond

// env runs the real CLI binary against one state dir and ssh config.
type env struct {
	t      *testing.T
	bin    string
	work   string
	sshCfg string
}

func (e *env) run(args ...string) string {
	e.t.Helper()
	out, _ := runCLI(e.t, e.bin, e.vars(), args...)
	return out
}

// vars is the environment that points the CLI at this env's state and
// ssh config.
func (e *env) vars() []string {
	return []string{"KANDEV_EXEC_STATE_DIR=" + filepath.Join(e.work, "state"),
		"KANDEV_EXEC_SSH_CONFIG=" + e.sshCfg, "SSH_AUTH_SOCK=", "NO_COLOR=1"}
}

// runCLI runs the CLI with vars added to this process's environment and
// returns its stdout and stderr; a failure ends the test.
func runCLI(t *testing.T, bin string, vars []string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), vars...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kandev-exec %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// buildCLI builds the CLI once per test, as a release does (no cgo).
func buildCLI(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "kandev-exec")
	sh(t, fmt.Sprintf("cd ../.. && CGO_ENABLED=0 go build -o %s .", bin))
	return bin
}

func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func timeIt(n int, setup, f func()) time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		if setup != nil {
			setup()
		}
		start := time.Now()
		f()
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// fixture is what the CLI benchmarks share: the binary built once, one
// sshd with the fault relay in front of it, and two hosts over them,
// "direct" and "delayed", added, trusted and each given a profile of the
// same name with one repository.
type fixture struct {
	*env
	relay *sshtest.Relay
	cfg   string // the ssh config defining both aliases
	srv   *sshtest.Server
}

func newFixture(t *testing.T, opts ...sshtest.Option) *fixture {
	work := t.TempDir()
	bin := buildCLI(t)
	srv := sshtest.NewServer(t, opts...)
	relay := sshtest.NewRelay(t, srv.Addr())

	sh(t, fmt.Sprintf(`set -e; git init -q --bare %[1]s/app.git; git init -q -b main %[1]s/seed
git -C %[1]s/seed -c user.name=b -c user.email=b@x commit -q --allow-empty -m one
git -C %[1]s/seed push -q %[1]s/app.git main`, work))
	cfg := filepath.Join(work, "ssh_config")
	var b strings.Builder
	for alias, port := range map[string]int{"direct": srv.Port(), "delayed": relay.Port()} {
		fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
			"  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  BatchMode yes\n  LogLevel ERROR\n", alias, port, srv.User(), srv.UserKeyPath)
	}
	os.WriteFile(cfg, []byte(b.String()), 0o600)
	e := &env{t: t, bin: bin, work: work, sshCfg: cfg}
	for _, h := range []string{"direct", "delayed"} {
		e.run("host", "add", h, "--alias", h)
		e.run("host", "trust", h, "--accept-new")
		prof := filepath.Join(work, h+".yaml")
		os.WriteFile(prof, []byte(fmt.Sprintf("name: %s\nhost: %s\nworkdir_root: %s\nrepositories:\n  - name: app\n    url: %s/app.git\n    branch: main\n",
			h, h, e.root(h), work)), 0o600)
		e.run("profile", "apply", "-f", prof)
	}
	return &fixture{env: e, relay: relay, cfg: cfg, srv: srv}
}

// root is the workdir root of host h.
func (e *env) root(h string) string { return filepath.Join(e.work, "remote-"+h) }

// TestBenchWarmLaunch: a warm `task launch` (helper cached on the host,
// the repository reachable from it: a new task, its checkout and its
// first session) directly and through the fault relay with 25 ms added
// each way, next to the same steps done by OpenSSH: one ssh per step, and
// one ssh doing them all (the floor for a single connection). A warm
// `task resume` (a new session in an existing checkout) is a second row.
// Each round runs every variant once, so a machine busy with other work
// slows them alike; the round trips are the median over rounds of
// (delayed - direct) / RTT.
func TestBenchWarmLaunch(t *testing.T) {
	f := newFixture(t)
	e, relay, cfg, work := f.env, f.relay, f.cfg, f.work

	// The first launch on each host puts the helper there: every launch
	// timed after it is warm.
	task := map[string]string{}
	for _, h := range []string{"direct", "delayed"} {
		var res struct {
			Task    struct{ ID string } `json:"task"`
			Session struct{ ID string } `json:"session"`
		}
		json.Unmarshal([]byte(e.run("task", "launch", "--profile", h, "--json", "--", "true")), &res)
		task[h] = res.Task.ID
		e.run("session", "stop", res.Session.ID)
	}
	lastSession := func(h string) string {
		var ss []struct{ ID string }
		json.Unmarshal([]byte(e.run("session", "ls", "--task", task[h], "--json")), &ss)
		return ss[0].ID
	}
	launch := func(h string) func() { return func() { e.run("task", "launch", "--profile", h, "--", "true") } }
	resume := func(h string) func() {
		return func() { e.run("task", "resume", task[h], "--", "true") }
	}

	// The OpenSSH baselines do what a launch does, each run in a new
	// directory: make it, clone, branch, start the command detached and
	// read back its pid.
	runs := 0
	launchSteps := func() []string {
		runs++
		dir := filepath.Join(work, "plain", fmt.Sprint(runs))
		return []string{
			"mkdir -p " + dir,
			"git clone -q -b main " + filepath.Join(work, "app.git") + " " + dir,
			"git -C " + dir + " checkout -q -b task",
			"cd " + dir + " && { nohup sh -c true >agent.log 2>&1 </dev/null & echo $! >agent.pid; }",
			"cat " + dir + "/agent.pid",
		}
	}
	const nSteps = 5
	perStep := func(alias string) func() {
		return func() {
			for _, s := range launchSteps() {
				sh(t, fmt.Sprintf("ssh -F %s %s '%s'", cfg, alias, s))
			}
		}
	}
	oneSSH := func(alias string) func() {
		return func() { sh(t, fmt.Sprintf("ssh -F %s %s '%s'", cfg, alias, strings.Join(launchSteps(), " && "))) }
	}

	type variant struct {
		name string
		run  func(alias string) func()
	}
	variants := []variant{
		{"kandev-exec task launch", launch},
		{"kandev-exec task resume", resume},
		{fmt.Sprintf("OpenSSH, one ssh per step (%d)", nSteps), perStep},
		{"OpenSSH, one ssh for all steps", oneSSH},
	}
	const n = 7
	relay.Delay(oneWay) // only the "delayed" alias goes through the relay
	times := make([][2][]time.Duration, len(variants))
	for range n {
		for i, v := range variants {
			for j, h := range []string{"direct", "delayed"} {
				if v.name == "kandev-exec task resume" {
					e.run("session", "stop", lastSession(h))
				}
				start := time.Now()
				v.run(h)()
				times[i][j] = append(times[i][j], time.Since(start))
			}
		}
	}
	rtt := 2 * oneWay
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	roundTrips := func(ts [2][]time.Duration) float64 {
		diffs := make([]time.Duration, len(ts[0]))
		for k := range diffs {
			diffs[k] = ts[1][k] - ts[0][k]
		}
		return float64(median(diffs)) / float64(rtt)
	}
	fmt.Printf("\nwarm launch (helper cached; resume: checkout present), medians of %d rounds, RTT %s added by the relay\n", n, rtt)
	fmt.Printf("%-36s %10s %12s %12s\n", "", "direct", "+25ms/way", "round trips")
	for i, v := range variants {
		fmt.Printf("%-36s %10s %12s %12.1f\n", v.name, ms(median(times[i][0])), ms(median(times[i][1])), roundTrips(times[i]))
	}
	for i, v := range variants[2:] {
		fmt.Printf("%-36s %9.2fx %11.2fx\n", "task launch / "+strings.TrimPrefix(v.name, "OpenSSH, "),
			float64(median(times[0][0]))/float64(median(times[i+2][0])), float64(median(times[0][1]))/float64(median(times[i+2][1])))
	}
	fmt.Printf("target for task launch (not asserted): at most 10 round trips\n")
}
