#!/usr/bin/env bash
# Makes sure the system Chromium is there for the HTML report's browser
# test (results/render/html/browser_test.go) and prints its path on the last line of
# stdout. When neither chromium nor chromium-browser is in PATH, installs
# Debian's chromium package with apt-get: as root, or through sudo.
#
# The test skips without a browser; KB_BENCH_REQUIRE_BROWSER=1 makes it fail.
set -o errexit -o nounset -o pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

find_chromium() {
  command -v chromium || command -v chromium-browser || true
}

path="$(find_chromium)"
if [[ -z "${path}" ]]; then
  apt_install chromium chromium
  path="$(find_chromium)"
  if [[ -z "${path}" ]]; then
    echo "chromium.sh: apt-get installed chromium, but it is not in PATH (${PATH})" >&2
    exit 1
  fi
fi
echo "${path}"
