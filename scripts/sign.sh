#!/usr/bin/env bash
# Sign a release's checksums file with the release key, for `helper fetch`
# (docs/security.md): writes FILE.sig beside it.
#
#   KANDEV_EXEC_SIGNING_KEY=/path/to/release-key scripts/sign.sh FILE [SNAPSHOT]
#
# The key's private half is the maintainers'; it is never in the repository.
# Without the key a release fails; a snapshot (SNAPSHOT=true, from goreleaser)
# stays unsigned, which `helper fetch` refuses.
set -euo pipefail
file=${1:?usage: scripts/sign.sh FILE [SNAPSHOT]}
if [ -z "${KANDEV_EXEC_SIGNING_KEY:-}" ]; then
  if [ "${2:-}" = true ]; then
    echo "$file is unsigned (KANDEV_EXEC_SIGNING_KEY is not set): \`helper fetch\` refuses its helpers" >&2
    exit 0
  fi
  echo "set KANDEV_EXEC_SIGNING_KEY to the path of the private release key" >&2
  exit 1
fi
rm -f "$file.sig"
ssh-keygen -q -Y sign -n kandev-exec-release -f "$KANDEV_EXEC_SIGNING_KEY" "$file" </dev/null
echo "signed $file: $file.sig" >&2
