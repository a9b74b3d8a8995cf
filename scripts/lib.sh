# Shared by demo.sh and bench.sh: install prerequisites, start throwaway sshd servers.

need_packages() {
  local need=()
  [ -x /usr/sbin/sshd ] || need+=(openssh-server)
  command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
  command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
  command -v git >/dev/null 2>&1 || need+=(git)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "installing ${need[*]} ..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}

# start_sshd DIR: a throwaway sshd on 127.0.0.1 with its own host and user
# keys; prints its port. The user key is DIR/id_ed25519.
start_sshd() {
  local dir=$1 port
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && mkdir -p /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_ed25519" </dev/null
  [ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519" </dev/null
  cat "$dir/id_ed25519.pub" >"$dir/authorized_keys"
  port=$(free_port)
  cat >"$dir/sshd_config" <<CFG
ListenAddress 127.0.0.1:$port
HostKey $dir/host_ed25519
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin yes
PidFile none
Subsystem sftp internal-sftp
AllowTcpForwarding yes
MaxStartups 100:30:200
MaxSessions 50
CFG
  # stdout must not be the caller's: $(start_sshd) would wait for it to close.
  /usr/sbin/sshd -D -e -f "$dir/sshd_config" >/dev/null 2>"$dir/sshd.log" &
  echo $! >"$dir/sshd.pid"
  for _ in $(seq 1 100); do
    grep -q "Server listening" "$dir/sshd.log" 2>/dev/null && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "sshd did not start; its log:" >&2
  cat "$dir/sshd.log" >&2
  return 1
}

stop_sshd() {
  local dir=$1
  [ -f "$dir/sshd.pid" ] && kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
}

# bench_row WHAT FIGURE BASELINE_WHAT BASELINE RATIO TARGET MET: one row of
# make bench's summary table, appended to $BENCH_ROWS when it is set
# (scripts/benchtable.sh prints them).
bench_row() {
  [ -n "${BENCH_ROWS:-}" ] || return 0
  local IFS=$'\t'
  echo "$*" >>"$BENCH_ROWS"
}
