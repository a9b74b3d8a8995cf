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

# say shows a command as a user would type it; run shows it, then runs it.
say() {
  echo; printf '$ %s' "${PIPED:-}kandev-exec"
  for a in "$@"; do
    case $a in *[[:space:]\"\$\;]*) printf " '%s'" "$a" ;; *) printf ' %s' "$a" ;; esac
  done
  echo
}
run() { say "$@"; "$KE" "$@"; }
# capture VAR ARGS...: run, keeping what it prints on stdout in VAR too.
capture() {
  local var=$1 out; shift
  say "$@"; out=$("$KE" "$@"); echo "$out"
  printf -v "$var" '%s' "$out"
}

echo "==> a throwaway sshd listens on 127.0.0.1:$port (alias 'demo' in $work/ssh_config)"
run host add demo --alias demo
run host test demo
# The operator checks the fingerprint out of band: here, on the server's key file.
fp=$(ssh-keygen -lf "$work/sshd/host_ed25519.pub" | awk '{print $2}')
echo; echo "(out of band, ssh-keygen -lf on the server says: $fp)"
run host trust demo --fingerprint "$fp"
run host show demo
run host ls

echo; echo "==> a repository to work on, an executor profile and a secret"
git init -q --bare "$work/app.git"
git init -q -b main "$work/seed"
git -C "$work/seed" -c user.name=demo -c user.email=demo@example.com commit -q --allow-empty -m "initial commit"
git -C "$work/seed" push -q "$work/app.git" main
cat >"$work/demo.yaml" <<YAML
name: demo
host: demo
workdir_root: $work/remote
shell: sh
env:
  GREETING: hello
  API_TOKEN: {secret: demo-token}
repositories:
  - name: app
    url: $work/app.git
    branch: main
YAML
run profile apply -f "$work/demo.yaml"
echo "(the secret comes from stdin, never from argv)"
PIPED="echo not-a-real-token | " say secret set demo-token
echo "not-a-real-token" | "$KE" secret set demo-token
run profile env demo --explain

echo; echo "==> launch an agent and follow it to its exit code"
run task launch --profile demo --name quick --follow -- sh -c 'echo "$GREETING from $KANDEV_TASK_ID on branch $(git rev-parse --abbrev-ref HEAD)"; exit 3' || echo "(exit code $? passed through)"

echo; echo "==> a long-running agent: follow its log, stop it, resume it, exec into its directory"
capture ids task launch --profile demo --name long --jq '.task.id + " " + .session.id' -- sh -c 'for i in 1 2 3; do echo "tick $i"; sleep 1; done; echo "work" > notes.txt; sleep 300'
read -r task session <<<"$ids"
echo "(task $task, session $session: the agent ticks three times, then writes notes.txt)"
sleep 4
run session logs "$session" --tail 2
run session stop "$session"
run task resume "$task" -- sh -c 'echo "resumed; notes from the first session: $(cat notes.txt)"'
sleep 1
run task exec long -- sh -c 'ls; git status --short'
run task ls --profile demo
run session ls
echo
echo "==> demo done: host pinned, tasks launched, followed, stopped, resumed and exec'd."
