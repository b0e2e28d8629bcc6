#!/usr/bin/env bash
# The whole test suite: formatting, vet, unit and integration tests with the
# race detector, and a short fuzz of the profile loader. Integration tests
# run against the real local control plane, which is built first if missing
# (KB_BENCH_REQUIRE_CONTROL_PLANE makes them fail rather than skip without it),
# and the HTML report is loaded in headless Chromium, installed if missing.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== gofmt" >&2
unformatted="$(gofmt -l $(git ls-files '*.go' | grep -v '^scripts/tools/'))"
if [[ -n "${unformatted}" ]]; then
  echo "gofmt would change these files (run gofmt -w):" >&2
  echo "${unformatted}" >&2
  exit 1
fi

echo "== go vet" >&2
go vet ./...

echo "== control plane" >&2
scripts/control-plane.sh >/dev/null
export KB_BENCH_REQUIRE_CONTROL_PLANE=1

# The HTML report is tested in a real browser (Debian's chromium); its
# screenshot is kept in artifacts/.
echo "== browser" >&2
scripts/chromium.sh >/dev/null
export KB_BENCH_REQUIRE_BROWSER=1
export KB_BENCH_ARTIFACTS="${KB_BENCH_ARTIFACTS:-${PWD}/artifacts}"

echo "== go test -race" >&2
go test -race -count=1 -timeout 20m ./...

echo "== fuzz profiles loader" >&2
go test -run='^$' -fuzz=FuzzParse -fuzztime=10s ./profiles
