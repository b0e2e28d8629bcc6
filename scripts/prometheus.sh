#!/usr/bin/env bash
# Makes sure a real Prometheus server is there for the live-metrics test
# (bench/live_prometheus_test.go, which has Prometheus scrape kb-bench during
# a run) and prints its path on the last line of stdout. When prometheus is
# not in PATH, installs Debian's prometheus package with apt-get: as root, or
# through sudo. Only the binary is used: the test starts its own server on
# loopback with a temporary configuration and storage, never the package's
# service.
#
# The test skips without Prometheus; KB_BENCH_REQUIRE_PROMETHEUS=1 makes it fail.
set -o errexit -o nounset -o pipefail

find_prometheus() {
  command -v prometheus || true
}

path="$(find_prometheus)"
if [[ -z "${path}" ]]; then
  if ! command -v apt-get >/dev/null; then
    echo "prometheus.sh: no prometheus in PATH, and no apt-get to install it with: install Prometheus with this system's package manager" >&2
    exit 1
  fi
  as_root=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "prometheus.sh: installing prometheus needs root: run this script as root, or install sudo" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  echo "prometheus.sh: installing prometheus with apt-get" >&2
  # A fresh container has no package lists yet. policy-rc.d keeps the
  # package's service from starting where an init system would start it.
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends prometheus >&2
  path="$(find_prometheus)"
  if [[ -z "${path}" ]]; then
    echo "prometheus.sh: apt-get installed prometheus, but it is not in PATH (${PATH})" >&2
    exit 1
  fi
fi
echo "${path}"
