#!/usr/bin/env bash
# make demo: add, test, trust and show a throwaway local sshd, end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages

export PATH="/usr/local/go/bin:$PATH"
echo "==> building kandev-exec"
make -s build
KE="$PWD/bin/kandev-exec"

work=$(mktemp -d)
trap 'stop_sshd "$work/sshd"; rm -rf "$work"' EXIT
port=$(start_sshd "$work/sshd")
cat >"$work/ssh_config" <<CFG
Host demo
  HostName 127.0.0.1
  Port $port
  User $(id -un)
  IdentityFile $work/sshd/id_ed25519
  IdentitiesOnly yes
CFG
export KANDEV_EXEC_STATE_DIR="$work/state" KANDEV_EXEC_SSH_CONFIG="$work/ssh_config"

run() { echo; echo "\$ kandev-exec $*"; "$KE" "$@"; }

echo "==> a throwaway sshd listens on 127.0.0.1:$port (alias 'demo' in $work/ssh_config)"
run host add demo --alias demo
run host test demo
# The operator checks the fingerprint out of band: here, on the server's key file.
fp=$(ssh-keygen -lf "$work/sshd/host_ed25519.pub" | awk '{print $2}')
echo; echo "(out of band, ssh-keygen -lf on the server says: $fp)"
run host trust demo --fingerprint "$fp"
run host show demo
run host ls
run host test demo --json
echo
echo "==> demo done: the host is added, tested and pinned."
