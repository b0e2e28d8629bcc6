# Sourced by chromium.sh and prometheus.sh. apt_install TOOL PACKAGE
# [APT_FLAGS...] installs Debian's PACKAGE with apt-get, as root or through
# sudo, or exits saying what to do; TOOL names the script in messages.
apt_install() {
  local tool="$1" package="$2"
  shift 2
  if ! command -v apt-get >/dev/null; then
    echo "${tool}.sh: no ${tool} in PATH, and no apt-get to install it with: install ${package} with this system's package manager" >&2
    exit 1
  fi
  local as_root=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "${tool}.sh: installing ${package} needs root: run this script as root, or install sudo" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  echo "${tool}.sh: installing ${package} with apt-get" >&2
  # A fresh container has no package lists yet. RUNLEVEL=1 keeps a
  # package's service from starting where an init system would start it.
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq "$@" "${package}" >&2
}
