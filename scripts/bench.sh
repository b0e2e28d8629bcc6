#!/usr/bin/env bash
# Benchmarks: the engine's per-operation overhead and the recorder's cost.
# Compare two runs with benchstat (go run golang.org/x/perf/cmd/benchstat).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go test -run='^$' -bench=. -benchmem -count="${COUNT:-6}" ./workload/... ./metrics/... ./results/ "$@"
