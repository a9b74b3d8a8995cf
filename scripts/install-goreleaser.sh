#!/usr/bin/env bash
# Build goreleaser, at the version releases are made with (docs/releasing.md),
# from the Go module proxy into DIR. It is a tool, not a dependency of the
# module, so it stays out of go.mod; `make snapshot` and `make release-test`
# use it from a temporary DIR when none is on PATH.
#
#   scripts/install-goreleaser.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/install-goreleaser.sh DIR}
version=v2.15.1
export PATH="/usr/local/go/bin:$PATH"
echo "building goreleaser $version into $dir" >&2
# CGO off, as goreleaser ships it, and the same whoever calls: one build cache.
CGO_ENABLED=0 GOBIN=$dir GOFLAGS= go install "github.com/goreleaser/goreleaser/v2@$version"
