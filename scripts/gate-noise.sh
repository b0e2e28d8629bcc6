#!/usr/bin/env bash
# Measures the gate's false-alarm rate and power on this machine, the way a
# CI user gates: interleaved A/B runs (kb-bench run --baseline-with) judged
# by the default gate (kb-bench gate DIR).
#
#   A/A: the same spec on both sides; a failed gate is a false alarm.
#   A/B: the candidate has a real, known regression: a client-side rate
#        limit (--qps) at (1 - REGRESSION) of the throughput the previous
#        pair's baseline measured (a calibration run's for the first), so
#        that the regression follows the machine's drift; a failed gate is
#        a catch. Each pair's realized regression (its candidate's median
#        throughput against its baseline's) is printed beside it.
#
# LOAD=intermittent runs a CPU-bound load beside it, switched on and off at
# random (two 'yes >/dev/null' processes, each state held 1-8 s), so that
# some samples meet a slower machine than their neighbours, as on a CI
# runner. REGRESSIONS lists the A/B cases (each AB runs). PAIRS lists the
# numbers of pairs at which scripts/gatepower judges every recorded run
# again, from its first samples, twice: as kb-bench's gate does (the
# signed-rank test over interleaved pairs, when they are enough) and with
# Mann-Whitney alone, both from the same samples. KEEP=DIR keeps the runs.
#
# Prints each rate with its 95% Wilson confidence interval. It runs on its
# own local control plane ('kb-bench local up' in a state dir of its own),
# stopped at the end. A benchmark, not a test: an A/B run of the defaults
# (8 pairs of 2 s samples) takes about a minute on a quiet machine, two or
# three on a loaded one.
#
#   AA=20 AB=20 COUNT=8 DURATION=2s WRITERS=4 REGRESSIONS="0.15 0.30" LOAD=intermittent PAIRS=5,6,8 scripts/gate-noise.sh
#
# Needs bin/kb-bench (make build) and the control plane (make control-plane).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

AA="${AA:-20}" AB="${AB:-20}" COUNT="${COUNT:-8}" DURATION="${DURATION:-2s}"
WRITERS="${WRITERS:-4}" REGRESSIONS="${REGRESSIONS:-0.15 0.30}" LOAD="${LOAD:-none}"
PAIRS="${PAIRS:-${COUNT}}" KEEP="${KEEP:-}"
case "${LOAD}" in
  none | intermittent) ;;
  *) echo "LOAD=${LOAD}: use none or intermittent" >&2; exit 2 ;;
esac
# shellcheck source=scripts/scratch.sh
source scripts/scratch.sh
runs="${KEEP:-${work}}"
mkdir -p "${runs}"
go build -o "${work}/gatepower" ./scripts/gatepower

# The intermittent load: a loop that starts two CPU-bound processes, or
# stops them, every 1-8 s at random; stopped (with them) at the end.
load_pid=""
load_stop() {
  if [[ -n "${load_pid}" ]]; then
    kill "${load_pid}" 2>/dev/null || true
    wait "${load_pid}" 2>/dev/null || true
  fi
}
trap 'load_stop; scratch_cleanup' EXIT
if [[ "${LOAD}" == intermittent ]]; then
  (
    hogs=() nap=""
    stop_hogs() {
      if [[ ${#hogs[@]} -gt 0 ]]; then kill "${hogs[@]}" 2>/dev/null || true; fi
      hogs=()
    }
    trap 'stop_hogs; [[ -n "${nap}" ]] && kill "${nap}" 2>/dev/null; exit 0' TERM
    while :; do
      if [[ ${#hogs[@]} -eq 0 ]]; then
        yes >/dev/null & hogs+=($!)
        yes >/dev/null & hogs+=($!)
      else
        stop_hogs
      fi
      sleep "$((RANDOM % 8 + 1))" &
      nap=$!
      wait "${nap}"
    done
  ) &
  load_pid=$!
fi

run() { "${kb}" run --state-dir "${state}" --quiet --writers "${WRITERS}" --duration "${DURATION}" "$@"; }
median_throughput() {
  # The median of a set's samples' ops/s, from their result.json files.
  find "$1" -name result.json -exec grep -h -m1 '"throughput"' {} + |
    tr -dc '0-9.\n' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

# Calibration: the throughput the first A/B's regression is a share of.
# The update strategy makes two requests an operation (a GET and a PUT, a
# conflict not retried), so a client QPS of 2 x rate (burst: one request
# a writer) caps it at rate.
run --count 3 --out "${work}/calibration" -o json >/dev/null
tput="$(median_throughput "${work}/calibration")"
echo "calibration: ${tput} ops/s" >&2

# gated runs one A/B run into ${runs}/NAME and gates its directory; it
# prints 1 when the gate failed, 0 when it passed, and stops the script on
# bad input.
gated() {
  local out="${runs}/$1"; shift
  set +o errexit
  run --count "${COUNT}" --out "${out}" "$@" >/dev/null 2>"${out}.log"
  local ran=$?
  "${kb}" gate "${out}" >"${out}.gate" 2>&1
  local code=$?
  set -o errexit
  if [[ ${ran} -ne 0 || ${code} -gt 1 ]]; then
    echo "run $* (exit ${ran}) or gate (exit ${code}) failed:" >&2
    cat "${out}.log" "${out}.gate" >&2
    exit 1
  fi
  echo "${code}"
}

# wilson K N: the share K/N and its 95% Wilson score interval.
wilson() {
  awk -v k="$1" -v n="$2" 'BEGIN {
    if (n == 0) { printf "no runs"; exit }
    z = 1.959964; p = k / n; d = 1 + z*z/n
    c = (p + z*z/(2*n)) / d; h = z * sqrt(p*(1-p)/n + z*z/(4*n*n)) / d
    lo = c - h; if (lo < 0) lo = 0; hi = c + h; if (hi > 1) hi = 1
    printf "%d of %d = %.1f%% (95%% CI %.1f%%-%.1f%%)", k, n, 100*p, 100*lo, 100*hi }'
}

summary=()
alarms=0
for i in $(seq "${AA}"); do
  f="$(gated "aa-${i}" --baseline-with "writers=${WRITERS}")"
  alarms=$((alarms + f))
  [[ ${f} -eq 1 ]] && grep FAIL "${runs}/aa-${i}.gate" | sed "s/^/  A\/A ${i} false alarm: /" >&2
  echo "A/A ${i}/${AA}: ${alarms} false alarms so far" >&2
done
summary+=("false alarms (A/A): $(wilson "${alarms}" "${AA}")")
for r in ${REGRESSIONS}; do
  caught=0
  for i in $(seq "${AB}"); do
    qps="$(awk -v t="${tput}" -v r="${r}" 'BEGIN {printf "%.1f", 2 * t * (1 - r)}')"
    f="$(gated "ab${r}-${i}" --qps "${qps}" --burst "${WRITERS}" --baseline-with qps=-1)"
    caught=$((caught + f))
    base="$(median_throughput "${runs}/ab${r}-${i}/baseline")"
    cand="$(median_throughput "${runs}/ab${r}-${i}/candidate")"
    echo "A/B ${r} ${i}/${AB}: --qps ${qps}: baseline ${base} ops/s, candidate ${cand} ops/s ($(awk -v b="${base}" -v c="${cand}" 'BEGIN {printf "%+.1f%%", 100 * (c / b - 1)}')); ${caught} caught so far" >&2
    tput="${base}"
  done
  summary+=("power (A/B, ${r} throughput regression): $(wilson "${caught}" "${AB}")")
done

echo "gate noise: default gate, interleaved A/B, --count ${COUNT}, --duration ${DURATION}, --writers ${WRITERS}, load ${LOAD}"
printf '%s\n' "${summary[@]}"
# Every run judged again on its first PAIRS pairs, both tests on the same samples.
shopt -s nullglob
aa=("${runs}"/aa-*/)
if [[ ${#aa[@]} -gt 0 ]]; then "${work}/gatepower" -pairs "${PAIRS}" -label "A/A" "${aa[@]}"; fi
for r in ${REGRESSIONS}; do
  ab=("${runs}"/ab"${r}"-*/)
  if [[ ${#ab[@]} -gt 0 ]]; then "${work}/gatepower" -pairs "${PAIRS}" -label "A/B ${r}" "${ab[@]}"; fi
done
