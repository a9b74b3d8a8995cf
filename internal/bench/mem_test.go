//go:build bench

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBenchControllerMemory: the resident memory of each session's
// controller, the release helper beside the CLI, with 50 sessions on one
// host at once, next to `sh -c` holding the same agent (the least a
// session could cost). Medians over the 50.
func TestBenchControllerMemory(t *testing.T) {
	f := newFixture(t)
	e := f.env
	beside := filepath.Join(filepath.Dir(e.bin), "kandev-exec-helper-"+runtime.GOOS+"-"+runtime.GOARCH)
	sh(t, fmt.Sprintf("cd ../.. && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o %s ./cmd/kandev-exec-helper", beside))
	const n = 50
	for range n {
		var res struct {
			Session struct{ ID string } `json:"session"`
		}
		json.Unmarshal([]byte(e.run("task", "launch", "--profile", "direct", "--json", "--", "sleep", "3600")), &res)
		t.Cleanup(func() { e.run("session", "stop", res.Session.ID) })
	}
	root := e.root("direct")
	controllers := processes(t, func(args []string) bool {
		i := slices.Index(args, "--session-dir")
		return len(args) > 3 && args[1] == "controller" && args[2] == "run" && i > 0 && i+1 < len(args) && strings.HasPrefix(args[i+1], root)
	})
	if len(controllers) != n {
		t.Fatalf("found %d controllers for %d sessions", len(controllers), n)
	}

	marker := fmt.Sprintf(": kandev-bench-%d", os.Getpid())
	sh(t, fmt.Sprintf(`ssh -F %s direct 'for i in $(seq %d); do nohup sh -c "sleep 3600; %s" >/dev/null 2>&1 </dev/null & done'`, f.cfg, n, marker))
	var shells []int
	deadline := time.Now().Add(time.Minute)
	// Exactly n: a shell's child is a copy of it until it runs sleep.
	for len(shells) != n && time.Now().Before(deadline) {
		shells = processes(t, func(args []string) bool {
			return len(args) == 3 && args[1] == "-c" && strings.HasSuffix(args[2], marker)
		})
		time.Sleep(50 * time.Millisecond) // polling /proc until all have started
	}
	t.Cleanup(func() {
		// Each shell's sleep first: a shell killed first leaves it running.
		for _, p := range processes(t, func(args []string) bool { return len(args) == 2 && args[0] == "sleep" }) {
			if slices.Contains(shells, parentOf(p)) {
				syscall.Kill(p, syscall.SIGTERM)
			}
		}
		for _, p := range shells {
			syscall.Kill(p, syscall.SIGTERM)
		}
	})
	if len(shells) != n {
		t.Fatalf("found %d of %d shells", len(shells), n)
	}
	kb := func(pids []int) int64 {
		var v []int64
		for _, p := range pids {
			v = append(v, rssKB(t, p))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	c, s := kb(controllers), kb(shells)
	mb := func(k int64) string { return fmt.Sprintf("%.1f MB", float64(k)/1024) }
	fmt.Printf("\nresident memory per session, median of %d at once: controller (release helper) %s, sh -c holding the agent %s\n", n, mb(c), mb(s))
	addRow(t, fmt.Sprintf("controller memory per session (%d at once)", n), mb(c), "sh -c holding the agent", mb(s),
		fmt.Sprintf("%.2fx", float64(c)/float64(s)), "<= 6 MB", yesNo(float64(c) <= 6*1024))
}

// processes are the pids whose command line match accepts.
func processes(t *testing.T, match func(args []string) bool) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if match(strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// rssKB is VmRSS of pid, in kB.
func rssKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// parentOf is pid's parent (0 when it is gone).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold blanks, so after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
