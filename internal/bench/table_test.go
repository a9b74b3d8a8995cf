//go:build bench

package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// addRow appends one row of make bench's summary table to $BENCH_ROWS,
// tab-separated (scripts/benchtable.sh prints them); without it, nothing.
// met is "yes", "no", or what keeps the row from saying.
func addRow(t *testing.T, what, figure, baseWhat, baseline, ratio, target, met string) {
	t.Helper()
	path := os.Getenv("BENCH_ROWS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, strings.Join([]string{what, figure, baseWhat, baseline, ratio, target, met}, "\t"))
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// rtRounds runs each variant on the direct and the delayed host once a
// round, n rounds (so a busy machine slows them alike; before, when set,
// prepares a run untimed). Each result has the variant's round trips,
// the median over rounds of (delayed - direct) / RTT, and its median
// time on the delayed host.
func rtRounds(n int, variants []rtVariant) []rtResult {
	diffs := make([][]time.Duration, len(variants))
	delayed := make([][]time.Duration, len(variants))
	for range n {
		for i, v := range variants {
			var took [2]time.Duration
			for j, h := range []string{"direct", "delayed"} {
				if v.before != nil {
					v.before(h)
				}
				start := time.Now()
				v.run(h)
				took[j] = time.Since(start)
			}
			diffs[i] = append(diffs[i], took[1]-took[0])
			delayed[i] = append(delayed[i], took[1])
		}
	}
	out := make([]rtResult, len(variants))
	for i := range variants {
		out[i] = rtResult{float64(median(diffs[i])) / float64(2*oneWay), median(delayed[i])}
	}
	return out
}

type rtVariant struct {
	before func(h string)
	run    func(h string)
}

type rtResult struct {
	rt      float64
	delayed time.Duration
}

func (r rtResult) rts() string { return fmt.Sprintf("%.1f RT", r.rt) }
