#!/usr/bin/env bash
# Measures what kb-bench's engine costs in throughput: 'kb-bench run
# --writers 1' against a bare client-go read-modify-write loop
# (scripts/bareloop, a process of its own), in turn on one local control
# plane ('kb-bench local up' in a state dir of its own, stopped at the
# end), so that drift hits both alike. Prints each round's ops/s and ratio,
# then the median ratio (the target: at least 0.97). A benchmark, not a
# test.
#
# SIDE_BY_SIDE=1 runs the two at the same time instead, on objects of
# their own, and counts the bare loop's operations inside kb-bench's
# measured window (bareloop --ops-log): both meet the same machine at the
# same moment, so drift between rounds cannot move the ratio; two bare
# loops measured this way give 1.00 within about 2%.
#
# SAME_OBJECT=1 gives the bare loop's ConfigMap the two labels kb-bench
# puts on its own (managed-by and run-id), so both write objects of the
# same shape: the labels and their managedFields entry cost the apiserver
# about 1.5-2% in throughput (bare loop against bare loop, side by side),
# which is the object's cost, not the engine's.
#
#   ROUNDS=8 DURATION=8s scripts/vs-bare.sh
#   SIDE_BY_SIDE=1 ROUNDS=6 DURATION=10s scripts/vs-bare.sh
#
# Needs bin/kb-bench (make build) and the control plane (make control-plane).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS="${ROUNDS:-8}" DURATION="${DURATION:-8s}" WARMUP="${WARMUP:-1s}"
# shellcheck source=scripts/scratch.sh
source scripts/scratch.sh
go build -o "${work}/bareloop" ./scripts/bareloop
kubeconfig="${state}/kubeconfig"
bare_flags=()
if [[ -n "${SAME_OBJECT:-}" ]]; then
  bare_flags=(--labels "app.kubernetes.io/managed-by=kb-bench,kb-bench.io/run-id=$(date -u +%Y%m%d-%H%M%S)-000000")
fi

kb_round() {
  "${kb}" run --state-dir "${state}" --quiet --writers 1 --warmup "${WARMUP}" --duration "${DURATION}" --out "${work}/kb-${1}" >/dev/null
  grep -m1 -o '"throughput": *[0-9.]*' "${work}/kb-${1}/result.json" | tr -dc '0-9.'
}
bare_round() {
  "${work}/bareloop" "${bare_flags[@]}" --kubeconfig "${kubeconfig}" --warmup "${WARMUP}" --duration "${DURATION}" | awk '{print $1}'
}

# side_by_side ROUND prints kb-bench's and the bare loop's operations in
# kb-bench's measured window, the bare loop started first and running
# until after kb-bench has finished.
side_by_side() {
  local secs="${DURATION%s}"
  "${work}/bareloop" "${bare_flags[@]}" --kubeconfig "${kubeconfig}" --warmup 0s --duration "$((secs + 15))s" --ops-log "${work}/ops-${1}" >/dev/null &
  local bare=$!
  sleep 1
  "${kb}" run --state-dir "${state}" --quiet --writers 1 --warmup "${WARMUP}" --duration "${DURATION}" --out "${work}/kb-${1}" >/dev/null
  wait "${bare}"
  local from to
  from="$(date -d "$(jq -r .started "${work}/kb-${1}/result.json")" +%s%N)"
  to="$(date -d "$(jq -r .ended "${work}/kb-${1}/result.json")" +%s%N)"
  if (( $(tail -1 "${work}/ops-${1}") < to )); then
    echo "round ${1}: the bare loop ended before kb-bench's window did; give it longer" >&2
    exit 1
  fi
  echo "$(jq .summary.ops "${work}/kb-${1}/result.json") $(awk -v a="${from}" -v b="${to}" '$1 >= a && $1 < b {n++} END {print n + 0}' "${work}/ops-${1}")"
}

ratios=()
for i in $(seq "${ROUNDS}"); do
  if [[ -n "${SIDE_BY_SIDE:-}" ]]; then
    read -r kb_ops bare_ops < <(side_by_side "${i}") || exit 1
    ratio="$(awk -v a="${kb_ops}" -v b="${bare_ops}" 'BEGIN {printf "%.3f", a / b}')"
    ratios+=("${ratio}")
    printf 'round %d, side by side: kb-bench %d ops, bare loop %d ops in kb-bench'"'"'s window, ratio %s\n' "${i}" "${kb_ops}" "${bare_ops}" "${ratio}"
    continue
  fi
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
