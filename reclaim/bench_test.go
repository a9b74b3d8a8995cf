//go:build bench

package reclaim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestBenchReclaim measures the local cost of proving and removing N
// clean small checkouts (RECLAIM_BENCH_N, default 1000) in one call,
// next to `rm -rf` of the same directories. It prints; it asserts only
// that everything was removed.
//
//	go test -tags bench -run TestBenchReclaim -v ./reclaim/
func TestBenchReclaim(t *testing.T) {
	n := 1000
	if s := os.Getenv("RECLAIM_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	bare, _ := origin(t)
	root := newRoot(t)
	seed := prepared(t, root, "seed", "task-1", bare)
	copies := func(prefix string) []string {
		var dirs []string
		for i := range n {
			dir := filepath.Join(root, "tasks", fmt.Sprintf("%s-%04d", prefix, i))
			if out, err := exec.Command("cp", "-a", seed, dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			dirs = append(dirs, dir)
		}
		return dirs
	}

	dirs := copies("rm")
	start, cpu0 := time.Now(), cpuTime(t)
	if out, err := exec.Command("rm", append([]string{"-rf", "--"}, dirs...)...).CombinedOutput(); err != nil {
		t.Fatalf("rm: %v\n%s", err, out)
	}
	rm, rmCPU := time.Since(start), cpuTime(t)-cpu0

	dirs = copies("rc")
	var targets []Target
	for _, d := range dirs {
		targets = append(targets, target(root, filepath.Base(d), "task-1"))
	}
	start = time.Now()
	plan, err := Prove(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	prove := time.Since(start)
	start, cpu0 = time.Now(), cpuTime(t)
	rep, err := Apply(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	applied, appliedCPU := time.Since(start), cpuTime(t)-cpu0
	for _, r := range rep.Results {
		if r.Outcome != Removed {
			t.Fatalf("%s: %+v", r.Path, r)
		}
	}
	t.Logf("%d clean checkouts: rm -rf %v; prove %v (%d git processes); apply = prove again + remove %v (%d git processes); apply/rm %.2f×",
		n, rm.Round(time.Millisecond), prove.Round(time.Millisecond), plan.GitProcesses,
		applied.Round(time.Millisecond), rep.GitProcesses, float64(applied)/float64(rm))
	// CPU time (this process and its children: git, rm) is what a busy
	// machine does not inflate much, unlike the wall clock.
	t.Logf("CPU: rm -rf %v; apply %v (%.2f× rm's)", rmCPU.Round(time.Millisecond), appliedCPU.Round(time.Millisecond),
		float64(appliedCPU)/float64(rmCPU))
}

// cpuTime is the user and system time of this process and of its
// children waited for so far.
func cpuTime(t *testing.T) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			t.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}
