//go:build bench

package reclaim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	start := time.Now()
	if out, err := exec.Command("rm", append([]string{"-rf", "--"}, dirs...)...).CombinedOutput(); err != nil {
		t.Fatalf("rm: %v\n%s", err, out)
	}
	rm := time.Since(start)

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
	start = time.Now()
	rep, err := Apply(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	applied := time.Since(start)
	for _, r := range rep.Results {
		if r.Outcome != Removed {
			t.Fatalf("%s: %+v", r.Path, r)
		}
	}
	t.Logf("%d clean checkouts: rm -rf %v; prove %v (%d git processes); apply = prove again + remove %v (%d git processes); apply/rm %.2f×",
		n, rm.Round(time.Millisecond), prove.Round(time.Millisecond), plan.GitProcesses,
		applied.Round(time.Millisecond), rep.GitProcesses, float64(applied)/float64(rm))
}
