#!/usr/bin/env bash
# Release builds without goreleaser (make dist), and goreleaser's first step.
#
#   scripts/dist.sh helpers   build the four helpers and compress them into
#                             internal/helperbin/embedded/ with SHA256SUMS
#                             (the sums of the binaries themselves)
#   scripts/dist.sh           that, then the four CLIs with those helpers
#                             embedded (-tags embedhelpers) into dist/, beside
#                             the helpers' .gz and checksums.txt over it all:
#                             the layout of a release, which `helper fetch`
#                             reads; signed as checksums.txt.sig when
#                             KANDEV_EXEC_SIGNING_KEY names the release key
#
# VERSION and COMMIT (environment) are stamped into every binary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH" CGO_ENABLED=0
: "${VERSION:?set VERSION}"
COMMIT=${COMMIT:-}
PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
pkg=github.com/kdlbs/kandev-exec/internal/buildinfo
ldflags="-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT"
emb=internal/helperbin/embedded

sum256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$emb"
mkdir -p "$emb"
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/} name=kandev-exec-helper-${p%/*}-${p#*/}
  echo "helper $p" >&2
  GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$tmp/$name" ./cmd/kandev-exec-helper
  # -n: no name or time in the header, so the same binary gives the same bytes.
  gzip -9n -c "$tmp/$name" >"$emb/$name.gz"
done
(cd "$tmp" && sum256 kandev-exec-helper-*) >"$emb/SHA256SUMS"
[ "${1:-}" = helpers ] && exit 0

rm -rf dist
mkdir dist
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  echo "cli $p" >&2
  GOOS=$os GOARCH=$arch go build -trimpath -tags embedhelpers -ldflags "$ldflags" -o "dist/kandev-exec-$os-$arch" .
done
cp "$emb"/*.gz dist/
(cd dist && sum256 kandev-exec-*) >"$tmp/checksums.txt"
mv "$tmp/checksums.txt" dist/checksums.txt
# Unsigned without KANDEV_EXEC_SIGNING_KEY: the CLIs in dist/ embed every
# helper, so only `helper fetch` from dist/ needs the signature.
scripts/sign.sh dist/checksums.txt true
ls -l dist >&2
