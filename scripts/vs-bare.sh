#!/usr/bin/env bash
# Measures what kb-bench's engine costs in throughput: 'kb-bench run
# --writers 1' against a bare client-go read-modify-write loop
# (scripts/bareloop, a process of its own), in turn on one local control
# plane ('kb-bench local up' in a state dir of its own, stopped at the
# end), so that drift hits both alike. Prints each round's ops/s and ratio,
# then the median ratio (the target: at least 0.97). A benchmark, not a
# test.
#
#   ROUNDS=8 DURATION=8s WRITERS=1 scripts/vs-bare.sh
#
# Needs bin/kb-bench (make build) and the control plane (make control-plane).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS="${ROUNDS:-8}" DURATION="${DURATION:-8s}" WARMUP="${WARMUP:-1s}"
# shellcheck source=scripts/scratch.sh
source scripts/scratch.sh
go build -o "${work}/bareloop" ./scripts/bareloop
kubeconfig="${state}/kubeconfig"

kb_round() {
  "${kb}" run --state-dir "${state}" --quiet --writers 1 --warmup "${WARMUP}" --duration "${DURATION}" --out "${work}/kb-${1}" >/dev/null
  grep -m1 -o '"throughput": *[0-9.]*' "${work}/kb-${1}/result.json" | tr -dc '0-9.'
}
bare_round() {
  "${work}/bareloop" --kubeconfig "${kubeconfig}" --warmup "${WARMUP}" --duration "${DURATION}" | awk '{print $1}'
}

ratios=()
for i in $(seq "${ROUNDS}"); do
  # A B B A ...: every other round the bare loop goes first, so that a
  # steady drift of the machine favours neither.
  if (( i % 2 )); then
    kb_ops="$(kb_round "${i}")"
    bare_ops="$(bare_round)"
  else
    bare_ops="$(bare_round)"
    kb_ops="$(kb_round "${i}")"
  fi
  ratio="$(awk -v a="${kb_ops}" -v b="${bare_ops}" 'BEGIN {printf "%.3f", a / b}')"
  ratios+=("${ratio}")
  printf 'round %d: kb-bench %.1f ops/s, bare loop %.1f ops/s, ratio %s\n' "${i}" "${kb_ops}" "${bare_ops}" "${ratio}"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {printf "median ratio kb-bench/bare over %d rounds: %s (min %s, max %s)\n", NR, (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[1], v[NR]}'
