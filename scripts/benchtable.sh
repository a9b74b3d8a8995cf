#!/usr/bin/env bash
# benchtable.sh ROWS: make bench's summary. The benchmarks append their
# rows to ROWS (tab-separated: what, figure, baseline, its figure, ratio,
# target, met); this prints every target below in this order, whether or
# not its measurement ran (one that did not run says so rather than
# vanishing), then any row the list does not name. README.md
# ("Performance") says how to read it.
set -euo pipefail
rows=$1
[ -f "$rows" ] || rows=/dev/null # nothing measured: every row says so

# Every target make bench measures: what (the name its benchmark gives
# the row), baseline, target. A benchmark renaming its row renames it here.
expected="reclaim --apply, 10 clean directories	ssh host rm -rf ...	<= 8 RT
reclaim --apply, 1,000 clean directories	ssh host rm -rf ...	<= 1.15x
task archive, clean task	one ssh: kill, git status, rm -rf	<= 2x
task exec T -- true	ssh host 'cd DIR && true'	<= floor + 1
task exec T -- true, connection reused	ssh with ControlPersist	<= floor + 1
session logs S	ssh host cat FILE	<= floor + 1
session stop S	ssh host kill PID	<= floor + 1
session show S	ssh host cat FILE	<= floor + 1
helper on the host		<= 5 MB
helper on the wire (gzip -9)		<= 2.2 MB
cold launch at 10 Mbit/s (release helper)	scp of the gzipped helper + a warm launch	<= 1.1x
controller memory per session (50 at once)	sh -c holding the agent	<= 6 MB
host ls, 201 hosts	one host show	<= 8x
host test --all, 100 hosts (par 16)	xargs -P16 ssh host 'uname; git --version'	<= 1x"

line() { printf '%.0s-' $(seq 1 154); echo; }
echo
echo "== summary: every figure next to its baseline, measured in this run (25 ms each way through the relay where round trips are counted)"
line
printf '%-44s %-17s %-44s %-17s %-9s %-14s %s\n' "what" "figure" "baseline" "baseline fig." "ratio" "target" "met"
line
awk -F'\t' -v expected="$expected" '
  function show(r) { printf "%-44s %-17s %-44s %-17s %-9s %-14s %s\n", r[1], r[2], r[3], r[4], r[5], r[6], r[7] }
  { measured[$1] = $0; order[++n] = $1 }
  END {
    k = split(expected, want, "\n")
    for (i = 1; i <= k; i++) {
      split(want[i], w, "\t")
      named[w[1]] = 1
      if (w[1] in measured) {
        split(measured[w[1]], r, "\t")
      } else {
        r[1] = w[1]; r[2] = "not measured"; r[3] = w[2]; r[4] = "-"; r[5] = "-"; r[6] = w[3]; r[7] = "did not run"
      }
      show(r)
    }
    for (i = 1; i <= n; i++) {
      if (!(order[i] in named)) { split(measured[order[i]], r, "\t"); show(r) }
    }
  }' "$rows"
line
echo "met says what this run measured: figures on a loaded machine wander, so rerun before concluding."
echo "\"did not run\": that benchmark failed or was not run (see its output above); the row keeps its place."
