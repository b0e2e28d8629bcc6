#!/usr/bin/env bash
# Builds the local control plane (upstream kube-apiserver and etcd; with
# --controller-manager also kube-controller-manager, which
# `kb-bench run --controller-manager` otherwise builds when it first needs
# it) from the source pinned in cluster/upstream, through the Go module
# proxy, into a cache outside the clone. Skips what is already built.
# The build is kb-bench's own (`kb-bench local install`): a checkout and an
# installed kb-bench build the same thing from the same pins.
#
#   KB_BENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/kb-bench)
#
# Prints the directory holding the binaries on its last line.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# -trimpath as scripts/build.sh builds: make run compiles kb-bench once.
exec go run -trimpath ./cmd/kb-bench local install "$@"
