#!/usr/bin/env bash
# Runs a go command in one of the pinned upstream modules that kb-bench
# builds its local control plane from (cluster/upstream/kube or etcd), e.g.
#
#   scripts/tools.sh kube get k8s.io/kubernetes@v1.37.2
#   scripts/tools.sh kube mod tidy
#
# The modules are kept as go.mod.txt, go.sum.txt and tools.go.txt so that
# the kb-bench binary can embed them (a directory with a go.mod is another
# module, which go:embed cannot reach, and the module zip behind
# `go install` leaves out): the one source that `kb-bench local install`
# and scripts/control-plane.sh build from. This script copies a module into
# a temporary directory under its real names, runs go there and copies
# go.mod and go.sum back.
set -o errexit -o nounset -o pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: scripts/tools.sh kube|etcd GO-ARGS..." >&2
  exit 2
fi
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster/upstream" && pwd)/$1"
shift
if [[ ! -f "${src}/go.mod.txt" ]]; then
  echo "no pinned module ${src}" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
for f in go.mod go.sum tools.go; do
  cp "${src}/${f}.txt" "${tmp}/${f}"
done
(cd "${tmp}" && GOWORK=off GOFLAGS=-mod=mod go "$@")
for f in go.mod go.sum; do
  cp "${tmp}/${f}" "${src}/${f}.txt"
done
