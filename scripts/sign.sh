#!/usr/bin/env bash
# Sign a release's checksums file with the release key, for `helper fetch`
# (docs/security.md): writes FILE.sig beside it.
#
#   KANDEV_EXEC_SIGNING_KEY=/path/to/release-key scripts/sign.sh dist/checksums.txt
#
# The key's private half is the maintainers'; it is never in the repository.
set -euo pipefail
: "${KANDEV_EXEC_SIGNING_KEY:?set KANDEV_EXEC_SIGNING_KEY to the path of the private release key}"
file=${1:?usage: scripts/sign.sh FILE}
rm -f "$file.sig"
ssh-keygen -q -Y sign -n kandev-exec-release -f "$KANDEV_EXEC_SIGNING_KEY" "$file" </dev/null
echo "signed $file: $file.sig" >&2
