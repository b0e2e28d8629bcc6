# Sourced by the benchmark scripts (gate-noise.sh, vs-bare.sh): a work
# directory and a local control plane of their own ('kb-bench local up' in
# a state dir inside it), both removed when the script exits.
#   kb     the kb-bench binary (bin/kb-bench: make build)
#   work   the work directory
#   state  the control plane's state dir (pass --state-dir "${state}")
kb=bin/kb-bench
work="$(mktemp -d)"
state="${work}/state"
scratch_cleanup() {
  "${kb}" local down --state-dir "${state}" >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap scratch_cleanup EXIT
trap 'exit 130' INT TERM
"${kb}" local up --state-dir "${state}" >&2
