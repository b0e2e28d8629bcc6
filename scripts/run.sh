#!/usr/bin/env bash
# Runs the default benchmark (8 writers, one shared ConfigMap, update strategy)
# against a real local control plane. Extra arguments go to `kb-bench run`.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec bin/kb-bench run --writers 8 --strategy update --duration 10s "$@"
