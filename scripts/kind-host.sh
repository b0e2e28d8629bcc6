#!/usr/bin/env bash
# Prepares a Docker host whose capability bounding set lacks capabilities
# (some VMs and sandboxes lack CAP_SYS_RESOURCE) to run kind's privileged
# node containers. On such a host `docker run --privileged` and every
# `docker exec` into a privileged container fail with "unable to apply
# caps: operation not permitted", and kind does everything through them.
#
# It installs scripts/kind-node/runc-boundcaps as
# /usr/local/libexec/kb-bench/runc-boundcaps (a runc wrapper that drops the
# capabilities the bounding set lacks from the spec runc is given),
# registers it in /etc/docker/daemon.json as the runtime "boundcaps" and as
# "default-runtime" (kind cannot pass --runtime), keeps every other key,
# and reloads dockerd with SIGHUP (no restart: running containers stay).
# Then it checks that a privileged container starts and that `docker exec`
# into it works. Idempotent. On a host whose bounding set is full it does
# nothing.
#
#   scripts/kind-host.sh          set the host up (root)
#   scripts/kind-host.sh --undo   restore daemon.json as it was, reload
#                                 dockerd, remove the wrapper (root)
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
libexec=/usr/local/libexec/kb-bench
wrapper=${libexec}/runc-boundcaps
backup=${libexec}/daemon.json.orig  # daemon.json before the first setup
absent=${libexec}/daemon.json.absent  # marks that there was none
written=${libexec}/daemon.json.written  # what setup wrote, to tell edits
daemon_json=${KB_BENCH_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}
runtime=boundcaps
check_image=kb-bench/hostcheck:busybox

die() {
  echo "kind-host.sh: $*" >&2
  exit 2
}
say() { echo "kind-host.sh: $*" >&2; }

# missing_caps prints the number of capabilities the kernel knows that the
# bounding set lacks.
missing_caps() {
  local bound last n=0 i
  bound=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)
  last=$(cat /proc/sys/kernel/cap_last_cap)
  for ((i = 0; i <= last; i++)); do
    (((0x${bound} >> i & 1) == 0)) && n=$((n + 1))
  done
  echo "${n}"
}

need_root() {
  [[ "$(id -u)" -eq 0 ]] || die "changing dockerd's runtime needs root: run it as root (sudo $0 $*)"
  command -v jq >/dev/null || die "jq is needed to edit ${daemon_json}: install it (apt-get install jq)"
  docker info >/dev/null 2>&1 || die "no Docker daemon answers: start dockerd first"
}

default_runtime() { docker info --format '{{.DefaultRuntime}}' 2>/dev/null; }

# reload sends dockerd SIGHUP and waits until its live default runtime is $1.
reload() {
  local want=$1 pid i
  pid=$(cat /var/run/docker.pid 2>/dev/null || pidof dockerd || true)
  [[ -n "${pid}" ]] || die "cannot find dockerd's pid to reload it (no /var/run/docker.pid, no dockerd process)"
  kill -HUP "${pid}"
  for ((i = 0; i < 100; i++)); do
    [[ "$(default_runtime)" == "${want}" ]] && return 0
    sleep 0.1
  done
  die "dockerd did not take default runtime ${want} after SIGHUP (it reports $(default_runtime)); see its log"
}

# write_json FILTER: rewrites daemon.json through jq FILTER, atomically.
write_json() {
  local tmp
  mkdir -p "$(dirname "${daemon_json}")"
  tmp=$(mktemp "${daemon_json}.XXXXXX")
  if [[ -s "${daemon_json}" ]]; then
    jq "$@" "${daemon_json}" >"${tmp}" || { rm -f "${tmp}"; die "${daemon_json} is not valid JSON: fix it first"; }
  else
    jq -n "$@" >"${tmp}"
  fi
  chmod 0644 "${tmp}"
  mv -f "${tmp}" "${daemon_json}"
}

# check starts a privileged container from a one-file busybox image and
# execs into it: the two things kind needs.
check() {
  local name="kb-bench-hostcheck-$$" dir
  if ! docker image inspect "${check_image}" >/dev/null 2>&1; then
    if ! dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
      source "${here}/apt.sh"
      apt_install kind-host busybox-static
    fi
    dir=$(mktemp -d)
    trap 'rm -rf "'"${dir}"'"' EXIT
    mkdir "${dir}/bin"
    cp /bin/busybox "${dir}/bin/busybox"
    tar -C "${dir}" -c bin | docker import - "${check_image}" >/dev/null
    rm -rf "${dir}"
  fi
  trap 'docker rm -f '"${name}"' >/dev/null 2>&1 || true' EXIT
  docker run -d --name "${name}" --privileged "${check_image}" /bin/busybox sleep 600 >/dev/null ||
    die "a privileged container still does not start (runtime $(default_runtime))"
  docker exec "${name}" /bin/busybox true ||
    die "docker exec into a privileged container still fails (runtime $(default_runtime))"
  docker rm -f "${name}" >/dev/null
  trap - EXIT
}

setup() {
  local n real_runc jq_path tmp
  n=$(missing_caps)
  if ((n == 0)); then
    echo "kind-host.sh: the capability bounding set is full; nothing to do" >&2
    return 0
  fi
  need_root
  say "the bounding set lacks ${n} capabilities: installing ${wrapper} as dockerd's default runtime"
  real_runc=$(command -v runc || true)
  [[ -n "${real_runc}" && "${real_runc}" != "${wrapper}" ]] || die "no runc in PATH to wrap: install runc"
  jq_path=$(command -v jq)
  mkdir -p "${libexec}"
  tmp=$(mktemp "${wrapper}.XXXXXX")
  sed -e "s|@RUNC@|${real_runc}|" -e "s|@JQ@|${jq_path}|" "${here}/kind-node/runc-boundcaps" >"${tmp}"
  chmod 0755 "${tmp}"
  mv -f "${tmp}" "${wrapper}"
  if [[ ! -e "${backup}" && ! -e "${absent}" ]]; then
    if [[ -e "${daemon_json}" ]]; then cp -p "${daemon_json}" "${backup}"; else touch "${absent}"; fi
  fi
  if [[ "$(jq -r --arg r "${runtime}" --arg w "${wrapper}" \
    '(.runtimes[$r].path == $w) and (."default-runtime" == $r)' "${daemon_json}" 2>/dev/null)" != true ]]; then
    write_json --arg r "${runtime}" --arg w "${wrapper}" '.runtimes[$r] = {path: $w} | ."default-runtime" = $r'
    cp -p "${daemon_json}" "${written}"
  fi
  [[ "$(default_runtime)" == "${runtime}" ]] || reload "${runtime}"
  check
  say "ok: privileged containers and docker exec work (default runtime ${runtime}; undo with $0 --undo)"
}

undo() {
  need_root
  if [[ ! -e "${backup}" && ! -e "${absent}" ]]; then
    say "not set up by this script (no ${backup}); nothing to undo"
    return 0
  fi
  local users
  users=$(docker ps -q | xargs -r docker inspect -f '{{.HostConfig.Runtime}} {{.Name}}' | awk -v r="${runtime}" '$1 == r {print substr($2, 2)}')
  [[ -z "${users}" ]] || die "running containers use the ${runtime} runtime and would lose docker exec: $(echo ${users}); delete them first (kind delete cluster), then undo"
  local orig
  orig=$(jq -r '."default-runtime" // "runc"' "${backup}" 2>/dev/null || echo runc)
  # Removing the key and reloading leaves the live default as it was: set
  # it back explicitly first, then restore the file.
  write_json --arg o "${orig}" '."default-runtime" = $o'
  reload "${orig}"
  if [[ -e "${absent}" ]]; then
    rm -f "${daemon_json}"
  elif [[ -e "${written}" ]] && ! cmp -s <(jq -S --arg o "${orig}" '."default-runtime" = $o' "${written}") <(jq -S . "${daemon_json}"); then
    # Someone edited daemon.json since: keep their edits, drop ours.
    write_json --arg r "${runtime}" --slurpfile b "${backup}" \
      'del(.runtimes[$r]) | (if (.runtimes // {}) == {} and ($b[0] | has("runtimes") | not) then del(.runtimes) else . end)
       | (if $b[0] | has("default-runtime") then . else del(."default-runtime") end)'
    say "${daemon_json} was edited after setup: removed only kb-bench's keys"
  else
    cp -p "${backup}" "${daemon_json}"
  fi
  reload "${orig}"
  docker image rm "${check_image}" >/dev/null 2>&1 || true
  rm -f "${wrapper}" "${backup}" "${absent}" "${written}"
  rmdir "${libexec}" 2>/dev/null || true
  say "undone: ${daemon_json} restored, default runtime ${orig}"
}

case "${1:-}" in
  "") setup ;;
  --undo) undo ;;
  -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" ;;
  *) die "unknown argument ${1}: use no argument to set up, --undo to undo" ;;
esac
