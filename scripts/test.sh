#!/usr/bin/env bash
# The whole test suite: formatting, vet, a lint of the CI example, unit and
# integration tests with the race detector, and short fuzzes (the profile
# loader, the gate's threshold parser, the report's reading of results and
# sweeps). Integration tests run against the real local control plane, which
# is built first if missing (KB_BENCH_REQUIRE_CONTROL_PLANE makes them fail
# rather than skip without it), and the HTML report is loaded in headless
# Chromium, installed if missing. A real Prometheus (Debian's package,
# installed if missing) scrapes a run's live metrics endpoint. With Docker,
# the offline kind node image is built (cached) and the tests create real
# kind clusters (the kind target, Job shards as real pods); without a
# Docker daemon they skip, unless KB_BENCH_REQUIRE_DOCKER is set (CI sets
# it), which makes them fail.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== gofmt" >&2
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [[ -n "${unformatted}" ]]; then
  echo "gofmt would change these files (run gofmt -w):" >&2
  echo "${unformatted}" >&2
  exit 1
fi

echo "== go vet" >&2
go vet ./...

# The CI example is a workflow for other repositories: actionlint (pinned,
# through the Go module proxy) checks it.
echo "== actionlint examples/ci" >&2
go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 examples/ci/kb-bench.yml

echo "== control plane" >&2
# The tests use kube-controller-manager too (--controller-manager).
scripts/control-plane.sh --controller-manager >/dev/null
export KB_BENCH_REQUIRE_CONTROL_PLANE=1

# The HTML report is tested in a real browser (Debian's chromium); its
# screenshot is kept in artifacts/.
echo "== browser" >&2
scripts/chromium.sh >/dev/null
export KB_BENCH_REQUIRE_BROWSER=1
export KB_BENCH_ARTIFACTS="${KB_BENCH_ARTIFACTS:-${PWD}/artifacts}"

# A real Prometheus scrapes kb-bench's live metrics during a run
# (cmd/kb-bench/prometheus_test.go); Debian's prometheus package.
echo "== prometheus" >&2
scripts/prometheus.sh >/dev/null
export KB_BENCH_REQUIRE_PROMETHEUS=1

# The real-kind tests run on the offline node image, built from the pins
# and cached (scripts/kind-node-image.sh; it prepares a host whose
# capability bounding set needs it with scripts/kind-host.sh). They read
# its reference from KB_BENCH_KIND_NODE_IMAGE and skip without it, unless
# KB_BENCH_REQUIRE_DOCKER is set: then a failed build fails here.
echo "== kind node image" >&2
if docker version >/dev/null 2>&1; then
  if kind_node_image="$(scripts/kind-node-image.sh | tail -1)" && [[ -n "${kind_node_image}" ]]; then
    export KB_BENCH_KIND_NODE_IMAGE="${kind_node_image}"
  elif [[ -n "${KB_BENCH_REQUIRE_DOCKER:-}" ]]; then
    echo "building the kind node image failed (above), and KB_BENCH_REQUIRE_DOCKER is set" >&2
    exit 1
  else
    echo "building the kind node image failed (above): the real-kind tests will skip" >&2
  fi
else
  echo "no Docker daemon answers: no kind node image, the real-kind tests will skip${KB_BENCH_REQUIRE_DOCKER:+ (and fail: KB_BENCH_REQUIRE_DOCKER is set)}" >&2
fi

echo "== go test -race" >&2
# The timeout is a hang guard, not a speed limit: cmd/kb-bench alone took
# 1,418 s beside two CPU-bound processes on the 2-core machine (the whole
# of make test 1,992 s), and the suite must hold on a machine loaded more
# than that (a second make test beside it). Tests wait for events up to
# this deadline.
go test -race -count=1 -timeout 60m ./...

echo "== fuzz profiles loader" >&2
go test -run='^$' -fuzz=FuzzParse -fuzztime=10s ./profiles

echo "== fuzz gate thresholds" >&2
go test -run='^$' -fuzz='^FuzzParseGate$' -fuzztime=10s ./results/analysis

echo "== fuzz reading results and sweeps into the report" >&2
go test -run='^$' -fuzz='^FuzzReport$' -fuzztime=10s ./results/render/html
