#!/usr/bin/env bash
# benchtable.sh ROWS: make bench's summary, one row per figure the
# benchmarks appended to ROWS (tab-separated: what, figure, baseline,
# its figure, ratio, target, met). README.md ("Performance") says how to
# read it.
set -euo pipefail
rows=$1
line() { printf '%.0s-' $(seq 1 154); echo; }
echo
echo "== summary: every figure next to its baseline, measured in this run (25 ms each way through the relay where round trips are counted)"
line
printf '%-44s %-17s %-44s %-17s %-9s %-14s %s\n' "what" "figure" "baseline" "baseline fig." "ratio" "target" "met"
line
if [ -s "$rows" ]; then
  awk -F'\t' '{ printf "%-44s %-17s %-44s %-17s %-9s %-14s %s\n", $1, $2, $3, $4, $5, $6, $7 }' "$rows"
else
  echo "(no rows: did the benchmarks run?)"
fi
line
echo "met says what this run measured: figures on a loaded machine wander, so rerun before concluding."
echo "Where a target waits on work not done yet (reclaim in one helper conversation, session operations"
echo "through the helper, a controller API without net/http), the row shows the figure as it is today."
