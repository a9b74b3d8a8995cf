#!/usr/bin/env bash
# make bench: kandev-exec `host test` next to OpenSSH on throwaway local sshd
# servers. Prints medians and ratios; asserts nothing about speed.
#
#   RUNS      measured runs per single-host step (default 15, after WARMUP)
#   RUNS_ALL  measured runs per 20-host step     (default 5, after WARMUP_ALL)
#   WARMUP    unmeasured warm-ups per single-host step (default 2)
#   WARMUP_ALL unmeasured warm-ups per 20-host step    (default 1)
#   HOSTS     how many sshd servers for the fan-out steps (default 20)
set -euo pipefail
start=$(date +%s)
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages

RUNS=${RUNS:-15}
RUNS_ALL=${RUNS_ALL:-5}
WARMUP=${WARMUP:-2}
WARMUP_ALL=${WARMUP_ALL:-1}
HOSTS=${HOSTS:-20}

export PATH="/usr/local/go/bin:$PATH"
[ -x bin/kandev-exec ] || make -s build
KE="$PWD/bin/kandev-exec"

work=$(mktemp -d)
cleanup() {
  for d in "$work"/sshd-*; do [ -d "$d" ] && stop_sshd "$d"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Neither side gets an agent: both authenticate with the same key file.
unset SSH_AUTH_SOCK
export KANDEV_EXEC_STATE_DIR="$work/state" KANDEV_EXEC_SSH_CONFIG="$work/ssh_config"
export NO_COLOR=1

echo "==> starting $HOSTS throwaway sshd servers on 127.0.0.1" >&2
: >"$work/ssh_config"
hosts=()
for i in $(seq -w 1 "$HOSTS"); do
  d="$work/sshd-$i"
  port=$(start_sshd "$d")
  cat >>"$work/ssh_config" <<CFG
Host b$i
  HostName 127.0.0.1
  Port $port
  User $(id -un)
  IdentityFile $d/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR

CFG
  hosts+=("b$i")
done

# quiet CMD...: run it, show its output only if it fails (then stop).
quiet() {
  local out
  if ! out=$("$@" 2>&1); then
    echo "bench: failed: $*" >&2
    echo "$out" >&2
    exit 1
  fi
}

echo "==> adding and trusting them" >&2
for h in "${hosts[@]}"; do
  d="$work/sshd-${h#b}"
  fp=$(ssh-keygen -lf "$d/host_ed25519.pub" | awk '{print $2}')
  quiet "$KE" host add "$h" --alias "$h"
  quiet "$KE" host trust "$h" --fingerprint "$fp"
done
one=${hosts[0]}

# timeit NAME WARMUPS RUNS CMD...: unmeasured warm-ups, then RUNS timed runs;
# each run's wall time in ms goes to $work/NAME.ms, one a line.
timeit() {
  local name=$1 warm=$2 runs=$3 t0 t1 i fails=0
  shift 3
  for ((i = 0; i < warm; i++)); do "$@" >/dev/null 2>&1 || true; done
  : >"$work/$name.ms"
  for ((i = 0; i < runs; i++)); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || fails=$((fails + 1))
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000)) | awk '{printf "%.1f\n", $1 / 1000}' >>"$work/$name.ms"
  done
  [ "$fails" -eq 0 ] || echo "bench: $name: $fails of $runs runs exited non-zero" >&2
}

median() {
  sort -n "$work/$1.ms" | awk '{v[NR] = $1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]
    else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx\n", a / b; else print "n/a" }'; }

ssh_true() { ssh -F "$work/ssh_config" -o BatchMode=yes "$1" true; }
ssh_probe() { ssh -F "$work/ssh_config" -o BatchMode=yes "$1" 'uname -s; uname -m; git --version'; }
ssh_loop() { local h; for h in "${hosts[@]}"; do ssh_true "$h" || return 1; done; }

# Every command must work once before it is timed (a failing command's time
# means nothing); that run also serves as a warm-up.
quiet "$KE" host test "$one"
quiet ssh_true "$one"
quiet ssh_probe "$one"
quiet "$KE" host test --all
quiet ssh_loop

echo "==> 1 host: $RUNS runs per command after $WARMUP warm-ups" >&2
timeit ke1 "$WARMUP" "$RUNS" "$KE" host test "$one"
timeit ssh1 "$WARMUP" "$RUNS" ssh_true "$one"
timeit probe1 "$WARMUP" "$RUNS" ssh_probe "$one"
echo "==> $HOSTS hosts: $RUNS_ALL runs per command after $WARMUP_ALL warm-up(s)" >&2
timeit keall "$WARMUP_ALL" "$RUNS_ALL" "$KE" host test --all
timeit keallp "$WARMUP_ALL" "$RUNS_ALL" "$KE" host test --all --parallel "$HOSTS"
timeit sshloop "$WARMUP_ALL" "$RUNS_ALL" ssh_loop

ke1=$(median ke1) ssh1=$(median ssh1) probe1=$(median probe1)
keall=$(median keall) keallp=$(median keallp) sshloop=$(median sshloop)

row() { printf '%-46s %11s %11s %7s\n' "$@"; }
line() { printf '%.0s-' $(seq 1 78); echo; }
echo
echo "kandev-exec bench: $(nproc) cores, $(ssh -V 2>&1 | awk '{print $1}' | tr -d ,), medians in ms"
line
row "step" "kandev-exec" "baseline" "ratio"
line
row "test 1 host        vs ssh true" "$ke1" "$ssh1" "$(ratio "$ke1" "$ssh1")"
row "test 1 host        vs ssh 'uname;uname;git'" "$ke1" "$probe1" "$(ratio "$ke1" "$probe1")"
row "test --all $HOSTS (par 8)  vs 1 host test" "$keall" "$ke1" "$(ratio "$keall" "$ke1")"
row "test --all $HOSTS (par $HOSTS) vs 1 host test" "$keallp" "$ke1" "$(ratio "$keallp" "$ke1")"
row "test --all $HOSTS (par 8)  vs ssh true loop x$HOSTS" "$keall" "$sshloop" "$(ratio "$keall" "$sshloop")"
row "test --all $HOSTS (par $HOSTS) vs ssh true loop x$HOSTS" "$keallp" "$sshloop" "$(ratio "$keallp" "$sshloop")"
line
echo "host test does more than 'ssh true': it dials, checks the pinned key and"
echo "probes uname, platform, git and the helper in one extra command; the"
echo "second row's baseline runs a comparable remote command over OpenSSH."
echo "The $HOSTS sshd servers and the client share this machine's $(nproc) cores, so"
echo "the fan-out rows measure handshake CPU as much as parallelism."
echo "Targets (not asserted): 1 host no slower than OpenSSH; --all within 2x of 1 host."
echo "runs: 1 host $RUNS (+$WARMUP warm-up), $HOSTS hosts $RUNS_ALL (+$WARMUP_ALL warm-up); bench took $(($(date +%s) - start))s"
