#!/usr/bin/env bash
# Builds bin/kb-bench with its version stamped in (git describe, else dev),
# static (CGO_ENABLED=0): a Job run on a kind target makes the shard pods'
# image from the running binary, which must run on an empty base.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${version}" -o bin/kb-bench ./cmd/kb-bench
echo "built bin/kb-bench ${version}" >&2
