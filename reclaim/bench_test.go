//go:build bench

package reclaim

import (
	"context"
	"encoding/json"
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
	n := benchN()
	bare, _ := origin(t)
	root := newRoot(t)
	seed := prepared(t, root, "seed", "task-1", bare)
	copies := func(prefix string) []string { return copiesOf(t, seed, prefix, n, nil) }

	rm, rmCPU := timedRm(t, copies("rm"))
	dirs := copies("rc")
	var targets []Target
	for _, d := range dirs {
		targets = append(targets, target(root, filepath.Base(d), "task-1"))
	}
	start := time.Now()
	plan, err := Prove(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	prove := time.Since(start)
	start, cpu0 := time.Now(), cpuTime(t)
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

// TestBenchListApply measures what a confirmed `reclaim --apply --yes`
// asks of the host for N orphans (RECLAIM_BENCH_N, default 1000), each a
// clean small checkout unchanged for two days: one listing that removes
// them (ListAndApply), next to `rm -rf` of the same directories. It
// prints; it asserts only that everything was removed.
//
//	go test -tags bench -run TestBenchListApply -v ./reclaim/
func TestBenchListApply(t *testing.T) {
	n := benchN()
	bare, _ := origin(t)
	root := newRoot(t)
	// The seed is young, so the listing leaves it.
	seed := prepared(t, root, "seed", "seed", bare)
	b, err := os.ReadFile(filepath.Join(seed, ".kandev", "owner.json"))
	if err != nil {
		t.Fatal(err)
	}
	var owner map[string]any
	if err := json.Unmarshal(b, &owner); err != nil {
		t.Fatal(err)
	}
	orphans := func(prefix string) []string {
		dirs := copiesOf(t, seed, prefix, n, func(dir, id string) {
			owner["task_id"] = id
			b, _ := json.Marshal(owner)
			if err := os.WriteFile(filepath.Join(dir, ".kandev", "owner.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		})
		find := exec.Command("sh", append([]string{"-c", `find "$@" -exec touch -h -d '2 days ago' {} +`, "sh"}, dirs...)...)
		if out, err := find.CombinedOutput(); err != nil {
			t.Fatalf("touch: %v\n%s", err, out)
		}
		syscall.Sync()
		return dirs
	}

	rm, rmCPU := timedRm(t, orphans("rm"))
	orphans("rc")
	start, cpu0 := time.Now(), cpuTime(t)
	l, err := ListAndApply(context.Background(), ListRequest{Root: root, Apply: &ListApply{View: LocalView{InstallationID: testInstallation}}})
	if err != nil {
		t.Fatal(err)
	}
	took, tookCPU := time.Since(start), cpuTime(t)-cpu0
	removed := 0
	for _, r := range l.Applied {
		if r.Outcome == Removed {
			removed++
		}
	}
	if removed != n {
		t.Fatalf("the listing removed %d of %d directories: %+v", removed, n, l.Applied)
	}
	t.Logf("%d orphans: rm -rf %v; listing that removes them %v (%.2f× rm's); CPU: rm -rf %v, listing %v (%.2f×)",
		n, rm.Round(time.Millisecond), took.Round(time.Millisecond), float64(took)/float64(rm),
		rmCPU.Round(time.Millisecond), tookCPU.Round(time.Millisecond), float64(tookCPU)/float64(rmCPU))
}

// benchN is RECLAIM_BENCH_N, the directories a bench makes: 1000 unless
// set.
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("RECLAIM_BENCH_N")); err == nil {
		return n
	}
	return 1000
}

// copiesOf makes n copies of the task directory seed beside it, named
// <prefix>-NNNN, each then given to mark (nil: none).
func copiesOf(t *testing.T, seed, prefix string, n int, mark func(dir, name string)) []string {
	var dirs []string
	for i := range n {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		dir := filepath.Join(filepath.Dir(seed), name)
		if out, err := exec.Command("cp", "-a", seed, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		if mark != nil {
			mark(dir, name)
		}
		dirs = append(dirs, dir)
	}
	// On disk, as a task directory days old is: removing files whose
	// blocks were never written skips the disk's part of a removal.
	syscall.Sync()
	return dirs
}

// timedRm removes dirs with one `rm -rf`: its wall and CPU time.
func timedRm(t *testing.T, dirs []string) (wall, cpu time.Duration) {
	start, cpu0 := time.Now(), cpuTime(t)
	if out, err := exec.Command("rm", append([]string{"-rf", "--"}, dirs...)...).CombinedOutput(); err != nil {
		t.Fatalf("rm: %v\n%s", err, out)
	}
	return time.Since(start), cpuTime(t) - cpu0
}
