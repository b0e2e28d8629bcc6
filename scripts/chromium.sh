#!/usr/bin/env bash
# Makes sure the system Chromium is there for the HTML report's browser
# test (results/render/html/browser_test.go) and prints its path on the last line of
# stdout. When neither chromium nor chromium-browser is in PATH, installs
# Debian's chromium package with apt-get: as root, or through sudo.
#
# The test skips without a browser; KB_BENCH_REQUIRE_BROWSER=1 makes it fail.
set -o errexit -o nounset -o pipefail

find_chromium() {
  command -v chromium || command -v chromium-browser || true
}

path="$(find_chromium)"
if [[ -z "${path}" ]]; then
  if ! command -v apt-get >/dev/null; then
    echo "chromium.sh: no chromium in PATH, and no apt-get to install it with: install Chromium with this system's package manager" >&2
    exit 1
  fi
  as_root=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "chromium.sh: installing chromium needs root: run this script as root, or install sudo" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  echo "chromium.sh: installing chromium with apt-get" >&2
  # A fresh container has no package lists yet.
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  path="$(find_chromium)"
  if [[ -z "${path}" ]]; then
    echo "chromium.sh: apt-get installed chromium, but it is not in PATH (${PATH})" >&2
    exit 1
  fi
fi
echo "${path}"
