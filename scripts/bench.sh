#!/usr/bin/env bash
# make bench: kandev-exec `host test` and `host ls` next to OpenSSH on
# throwaway local sshd servers. Prints medians and ratios; asserts nothing
# about speed. With BENCH_ROWS set, the rows of make bench's summary
# table are appended there too (scripts/benchtable.sh prints them).
#
#   RUNS      measured rounds per single-host step (default 15, after WARMUP)
#   RUNS_ALL  measured rounds per fan-out step     (default 5, after WARMUP_ALL)
#   WARMUP    unmeasured warm-ups per single-host step (default 2)
#   WARMUP_ALL unmeasured warm-ups per fan-out step    (default 1)
#   HOSTS     how many sshd servers (default 20)
#   N_ALL     host records `host test --all` dials, spread over them (default 100)
#   PAR       its --parallel, and xargs -P of the baseline (default 16)
#   N_LS      host records `host ls` lists, each its own ssh config alias (default 201)
#   KE        the CLI measured (default bin/kandev-exec, built when missing)
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
N_ALL=${N_ALL:-100}
PAR=${PAR:-16}
N_LS=${N_LS:-201}

export PATH="/usr/local/go/bin:$PATH"
if [ -z "${KE:-}" ]; then
  [ -x bin/kandev-exec ] || make -s build
  KE="$PWD/bin/kandev-exec"
fi

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

echo "==> adding and trusting them, and $N_ALL host records over them" >&2
fps=()
for h in "${hosts[@]}"; do
  d="$work/sshd-${h#b}"
  fp=$(ssh-keygen -lf "$d/host_ed25519.pub" | awk '{print $2}')
  fps+=("$fp")
  quiet "$KE" host add "$h" --alias "$h"
  quiet "$KE" host trust "$h" --fingerprint "$fp"
done
one=${hosts[0]}
# The fan-out: its own state, N_ALL records, server i mod HOSTS each.
all_aliases=()
for i in $(seq 1 "$N_ALL"); do
  k=$(((i - 1) % HOSTS))
  all_aliases+=("${hosts[$k]}")
  KANDEV_EXEC_STATE_DIR="$work/state-all" quiet "$KE" host add "$(printf 't%03d' "$i")" --alias "${hosts[$k]}"
  KANDEV_EXEC_STATE_DIR="$work/state-all" quiet "$KE" host trust "$(printf 't%03d' "$i")" --fingerprint "${fps[$k]}"
done
# The listing: its own state and config, one alias a host, nothing dialled.
echo "==> $N_LS host records for host ls" >&2
: >"$work/ls_config"
for i in $(seq 1 "$N_LS"); do
  printf 'Host l%03d\n  HostName 10.1.%d.%d\n  Port %d\n  User u%d\n\n' "$i" $((i / 250)) $((i % 250 + 1)) $((2000 + i)) "$i" >>"$work/ls_config"
done
for i in $(seq 1 "$N_LS"); do
  KANDEV_EXEC_STATE_DIR="$work/state-ls" KANDEV_EXEC_SSH_CONFIG="$work/ls_config" quiet "$KE" host add "$(printf 'l%03d' "$i")"
done

# rounds NAMES RUNS WARMUPS: each round runs every function named in
# NAMES once, in order (so a machine busy with other work slows them
# alike); each run's wall time in ms goes to $work/NAME.ms, one a line.
rounds() {
  local names=$1 runs=$2 warm=$3 t0 t1 i n fails=0
  for ((i = 0; i < warm; i++)); do for n in $names; do "$n" >/dev/null 2>&1 || true; done; done
  for n in $names; do : >"$work/$n.ms"; done
  for ((i = 0; i < runs; i++)); do
    for n in $names; do
      t0=$(date +%s%N)
      "$n" >/dev/null 2>&1 || { fails=$((fails + 1)); echo "bench: $n exited non-zero" >&2; }
      t1=$(date +%s%N)
      echo $(((t1 - t0) / 1000)) | awk '{printf "%.1f\n", $1 / 1000}' >>"$work/$n.ms"
    done
  done
  [ "$fails" -eq 0 ] || echo "bench: $fails runs exited non-zero" >&2
}

median() {
  sort -n "$work/$1.ms" | awk '{v[NR] = $1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]
    else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx\n", a / b; else print "n/a" }'; }
# met RATIO MAX: yes when the ratio (as ratio prints it) is at most MAX.
met() { awk -v r="${1%x}" -v m="$2" 'BEGIN { print (r + 0 <= m + 0) ? "yes" : "no" }'; }

ssh_true() { ssh -F "$work/ssh_config" -o BatchMode=yes "$1" true; }
ssh_probe() { ssh -F "$work/ssh_config" -o BatchMode=yes "$1" 'uname -s; uname -m; git --version'; }

ke1() { "$KE" host test "$one"; }
ssh1() { ssh_true "$one"; }
probe1() { ssh_probe "$one"; }
keall() { KANDEV_EXEC_STATE_DIR="$work/state-all" "$KE" host test --all --parallel "$PAR"; }
xargsall() {
  printf '%s\n' "${all_aliases[@]}" | xargs -P "$PAR" -I{} ssh -F "$work/ssh_config" -o BatchMode=yes {} 'uname; git --version'
}
kels() { KANDEV_EXEC_STATE_DIR="$work/state-ls" KANDEV_EXEC_SSH_CONFIG="$work/ls_config" "$KE" host ls; }
keshow() { KANDEV_EXEC_STATE_DIR="$work/state-ls" KANDEV_EXEC_SSH_CONFIG="$work/ls_config" "$KE" host show l001; }

# Every command must work once before it is timed (a failing command's time
# means nothing); that run also serves as a warm-up.
for f in ke1 ssh1 probe1 keall xargsall kels keshow; do quiet "$f"; done

echo "==> 1 host: $RUNS rounds after $WARMUP warm-ups" >&2
rounds "ke1 ssh1 probe1" "$RUNS" "$WARMUP"
echo "==> host ls of $N_LS hosts and one host show: $RUNS rounds after $WARMUP warm-ups" >&2
rounds "kels keshow" "$RUNS" "$WARMUP"
echo "==> $N_ALL hosts at $PAR at once: $RUNS_ALL rounds after $WARMUP_ALL warm-up(s)" >&2
rounds "keall xargsall" "$RUNS_ALL" "$WARMUP_ALL"

for f in ke1 ssh1 probe1 keall xargsall kels keshow; do printf -v "m_$f" '%s' "$(median "$f")"; done

row() { printf '%-50s %11s %11s %7s\n' "$@"; }
line() { printf '%.0s-' $(seq 1 82); echo; }
echo
echo "kandev-exec bench: $(nproc) cores, $(ssh -V 2>&1 | awk '{print $1}' | tr -d ,), medians in ms"
line
row "step" "kandev-exec" "baseline" "ratio"
line
row "test 1 host   vs ssh true" "$m_ke1" "$m_ssh1" "$(ratio "$m_ke1" "$m_ssh1")"
row "test 1 host   vs ssh 'uname;uname;git'" "$m_ke1" "$m_probe1" "$(ratio "$m_ke1" "$m_probe1")"
row "test --all $N_ALL (par $PAR) vs xargs -P$PAR ssh 'uname;git'" "$m_keall" "$m_xargsall" "$(ratio "$m_keall" "$m_xargsall")"
row "test --all $N_ALL (par $PAR) vs 1 host test" "$m_keall" "$m_ke1" "$(ratio "$m_keall" "$m_ke1")"
row "host ls $N_LS   vs 1 host show" "$m_kels" "$m_keshow" "$(ratio "$m_kels" "$m_keshow")"
line
echo "host test does more than 'ssh true': it dials, checks the pinned key and"
echo "probes uname, platform, git and the helper in one extra command; the"
echo "second row's baseline runs a comparable remote command over OpenSSH."
echo "The $N_ALL host records share $HOSTS sshd servers, and they and the client"
echo "share this machine's $(nproc) cores, so the fan-out rows measure handshake CPU"
echo "as much as parallelism. host ls resolves each host through the ssh config"
echo "(one alias a host), keeping the answers while the config files read the same."
echo "runs: 1 host $RUNS (+$WARMUP warm-up), fan-out $RUNS_ALL (+$WARMUP_ALL warm-up); bench took $(($(date +%s) - start))s"

r_all=$(ratio "$m_keall" "$m_xargsall") r_ls=$(ratio "$m_kels" "$m_keshow")
bench_row "host ls, $N_LS hosts" "$m_kels ms" "one host show" "$m_keshow ms" "$r_ls" "<= 8x" "$(met "$r_ls" 8)"
bench_row "host test --all, $N_ALL hosts (par $PAR)" "$m_keall ms" "xargs -P$PAR ssh host 'uname; git --version'" "$m_xargsall ms" "$r_all" "<= 1x" "$(met "$r_all" 1)"
