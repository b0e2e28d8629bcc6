#!/usr/bin/env bash
# Makes sure a real Prometheus server is there for the live-metrics test
# (cmd/kb-bench/prometheus_test.go, which has Prometheus scrape kb-bench during
# a run) and prints its path on the last line of stdout. When prometheus is
# not in PATH, installs Debian's prometheus package with apt-get: as root, or
# through sudo. Only the binary is used: the test starts its own server on
# loopback with a temporary configuration and storage, never the package's
# service.
#
# The test skips without Prometheus; KB_BENCH_REQUIRE_PROMETHEUS=1 makes it fail.
set -o errexit -o nounset -o pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

find_prometheus() {
  command -v prometheus || true
}

path="$(find_prometheus)"
if [[ -z "${path}" ]]; then
  apt_install prometheus prometheus --no-install-recommends
  path="$(find_prometheus)"
  if [[ -z "${path}" ]]; then
    echo "prometheus.sh: apt-get installed prometheus, but it is not in PATH (${PATH})" >&2
    exit 1
  fi
fi
echo "${path}"
