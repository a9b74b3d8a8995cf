//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// baselineRev is the last revision whose CLI uploaded itself, raw, over
// SFTP: the cold launch this branch set out to shrink.
const baselineRev = "bc995b3"

// coldVariant is one way a CLI brings its helper to a cold host.
type coldVariant struct {
	name string
	// setup builds into dir and returns the CLI and the binary it uploads.
	setup func(t *testing.T, dir string) (cli, helper string)
}

// linkRate is the slow link of the second table: 10 Mbit/s each way, a
// laptop's uplink to a VPS.
const linkRate = 10e6 / 8

// TestBenchColdLaunch: the first launch to a host with no helper cached,
// through the relay with 25 ms added each way, then also capped at 10
// Mbit/s; bytes that crossed the relay (both directions, the clone and
// the launch included) and wall time, medians of a few runs, each to a
// fresh workdir root.
func TestBenchColdLaunch(t *testing.T) {
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := func(t *testing.T, dir, out, pkg string) {
		sh(t, fmt.Sprintf("cd %s && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o %s %s", dir, out, pkg))
	}
	variants := []coldVariant{
		{"CLI as helper, raw over SFTP (" + baselineRev + ")", func(t *testing.T, dir string) (string, string) {
			old := filepath.Join(dir, "src")
			sh(t, fmt.Sprintf("mkdir -p %s && git -C %s archive %s | tar -x -C %s", old, src, baselineRev, old))
			build(t, old, filepath.Join(dir, "kandev-exec"), ".")
			return filepath.Join(dir, "kandev-exec"), filepath.Join(dir, "kandev-exec")
		}},
		{"CLI as helper, gzip (go install, no helper)", func(t *testing.T, dir string) (string, string) {
			build(t, src, filepath.Join(dir, "kandev-exec"), ".")
			return filepath.Join(dir, "kandev-exec"), filepath.Join(dir, "kandev-exec")
		}},
		{"helper, gzip -9 (release: embedded/fetched)", func(t *testing.T, dir string) (string, string) {
			build(t, src, filepath.Join(dir, "kandev-exec"), ".")
			h := filepath.Join(dir, "kandev-exec-helper-linux-amd64")
			build(t, src, h, "./cmd/kandev-exec-helper")
			// The .gz beside the CLI is sent as it is; the binary stays for its size.
			sh(t, fmt.Sprintf("gzip -9nk %s && mv %s %s.bin", h, h, h))
			return filepath.Join(dir, "kandev-exec"), h + ".bin"
		}},
	}

	work := t.TempDir()
	srv := sshtest.NewServer(t)
	relay := sshtest.NewRelay(t, srv.Addr())
	sh(t, fmt.Sprintf(`set -e; git init -q --bare %[1]s/app.git; git init -q -b main %[1]s/seed
git -C %[1]s/seed -c user.name=b -c user.email=b@x commit -q --allow-empty -m one
git -C %[1]s/seed push -q %[1]s/app.git main`, work))
	cfg := filepath.Join(work, "ssh_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("Host delayed\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
		relay.Port(), srv.User(), srv.UserKeyPath)), 0o600)

	const n = 3
	type result struct {
		wire int64
		secs time.Duration
	}
	type row struct {
		name  string
		size  int64
		links [2]result // 25 ms each way; the same capped at linkRate
	}
	var rows []row
	var release, releaseBase time.Duration // the release helper's cold launch at linkRate, and its baseline
	for vi, v := range variants {
		dir := filepath.Join(work, fmt.Sprintf("v%d", vi))
		os.MkdirAll(filepath.Join(dir, "cache"), 0o700)
		cli, helper := v.setup(t, dir)
		fi, _ := os.Stat(helper)
		e := &env{t: t, bin: cli, work: dir, sshCfg: cfg}
		relay.Pass()
		relay.Limit(0)
		// An empty user cache: only what sits beside the CLI, or the CLI.
		t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
		e.run("host", "add", "h", "--alias", "delayed")
		e.run("host", "trust", "h", "--accept-new")
		r := row{name: v.name, size: fi.Size()}
		for li, rate := range []int64{0, linkRate} {
			relay.Delay(oneWay)
			relay.Limit(rate)
			var times, wires []time.Duration // bytes in a Duration, to share median
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("p%d-%d", li, i)
				prof := filepath.Join(dir, name+".yaml")
				os.WriteFile(prof, []byte(fmt.Sprintf("name: %s\nhost: h\nworkdir_root: %s/remote-%s\nrepositories:\n  - name: app\n    url: %s/app.git\n    branch: main\n",
					name, dir, name, work)), 0o600)
				e.run("profile", "apply", "-f", prof)
				relay.Bytes()
				start := time.Now()
				stderr := e.runErr("task", "launch", "--profile", name, "--", "true")
				times = append(times, time.Since(start))
				wires = append(wires, time.Duration(relay.Bytes()))
				if !strings.Contains(stderr, "Uploading helper") {
					t.Fatalf("%s: launch %s found the helper cached:\n%s", v.name, name, stderr)
				}
			}
			r.links[li] = result{int64(median(wires)), median(times)}
			if vi == len(variants)-1 && rate == linkRate {
				release, releaseBase = r.links[li].secs, scpAndWarm(t, e, cfg, strings.TrimSuffix(helper, ".bin")+".gz", dir, fmt.Sprintf("p%d-0", li), n)
			}
		}
		rows = append(rows, r)
	}

	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	fmt.Printf("\ncold launch (helper not cached on the host), medians of %d, RTT %s added by the relay\n", n, 2*oneWay)
	fmt.Printf("%-46s %8s %12s %9s %12s\n", "what is uploaded", "binary", "on the wire", "seconds", "at 10 Mbit/s")
	for _, r := range rows {
		fmt.Printf("%-46s %8s %12s %9.2f %12.2f\n", r.name, mb(r.size), mb(r.links[0].wire), r.links[0].secs.Seconds(), r.links[1].secs.Seconds())
	}
	fmt.Printf("on the wire: every byte through the relay, both directions, for the whole launch (clone included)\n")
	fmt.Printf("baseline at 10 Mbit/s: scp of the gzipped helper, then a warm launch: %.2f s\n", releaseBase.Seconds())
	ratio := float64(release) / float64(releaseBase)
	addRow(t, "cold launch at 10 Mbit/s (release helper)", fmt.Sprintf("%.2f s", release.Seconds()), "scp of the gzipped helper + a warm launch",
		fmt.Sprintf("%.2f s", releaseBase.Seconds()), fmt.Sprintf("%.2fx", ratio), "<= 1.1x", yesNo(ratio <= 1.1))
}

// scpAndWarm is the cold launch's floor over the link as it is set: scp
// of the gzipped helper to the host, then a warm launch of profile (its
// root holds the helper by now); the median of n.
func scpAndWarm(t *testing.T, e *env, cfg, gz, dir, profile string, n int) time.Duration {
	var ds []time.Duration
	for i := range n {
		start := time.Now()
		sh(t, fmt.Sprintf("scp -q -F %s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null %s delayed:%s/scp-%d.gz", cfg, gz, dir, i))
		e.run("task", "launch", "--profile", profile, "--", "true")
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// runErr is run returning stderr (the launch's progress lines).
func (e *env) runErr(args ...string) string {
	e.t.Helper()
	_, stderr := runCLI(e.t, e.bin, e.vars(), args...)
	return stderr
}
