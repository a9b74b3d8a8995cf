//go:build bench

package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
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

// rtRounds runs each variant n rounds on the relayed host, twice a
// round: through the relay with nothing added, and with oneWay added
// each way (before, when set, prepares each run untimed). Both runs go
// through the same relay, so what it costs by itself cancels out, and
// they take turns going first, so a machine busier for one than the
// other does not lean every round the same way. Each result has the
// variant's round trips, the median over rounds of (delayed - plain) /
// RTT, and its median time delayed.
func rtRounds(relay *sshtest.Relay, n int, variants []rtVariant) []rtResult {
	defer relay.Delay(0)
	diffs := make([][]time.Duration, len(variants))
	plain, delayed := make([][]time.Duration, len(variants)), make([][]time.Duration, len(variants))
	for round := range n {
		for i, v := range variants {
			var took [2]time.Duration // nothing added, oneWay added
			for k := range 2 {
				j := (k + round) % 2
				relay.Delay(time.Duration(j) * oneWay)
				if v.before != nil {
					v.before(relayed)
				}
				start := time.Now()
				v.run(relayed)
				took[j] = time.Since(start)
			}
			diffs[i] = append(diffs[i], took[1]-took[0])
			plain[i], delayed[i] = append(plain[i], took[0]), append(delayed[i], took[1])
		}
	}
	out := make([]rtResult, len(variants))
	for i := range variants {
		out[i] = rtResult{float64(median(diffs[i])) / float64(2*oneWay), median(delayed[i]),
			float64(slices.Min(delayed[i])-slices.Min(plain[i])) / float64(2*oneWay)}
	}
	return out
}

// relayed is the fixture's host behind the relay.
const relayed = "delayed"

type rtVariant struct {
	before func(h string)
	run    func(h string)
}

type rtResult struct {
	rt      float64
	delayed time.Duration
	// fastest is the round trips between the fastest run of each kind: a
	// busy machine only ever adds time, so it is the estimate least
	// moved by load.
	fastest float64
}

func (r rtResult) rts() string { return fmt.Sprintf("%.1f RT", r.rt) }
