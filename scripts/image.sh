#!/usr/bin/env bash
# Builds kb-bench's container image as a docker-loadable tarball,
# bin/kb-bench-image.tar, tagged kb-bench/kb-bench:VERSION, without Docker or
# a registry: a static kb-bench (built as scripts/build.sh builds it, with
# CGO_ENABLED=0) and this host's CA bundle on an empty base, run as user
# 65532. GOARCH=arm64 builds for arm64 nodes; IMAGE_REPO renames the image;
# IMAGE_OUT writes the tarball elsewhere (the binary goes beside it).
#   kind load image-archive bin/kb-bench-image.tar
#   crane push bin/kb-bench-image.tar REGISTRY/kb-bench:TAG
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
revision="$(git rev-parse HEAD 2>/dev/null || true)"
arch="${GOARCH:-$(go env GOARCH)}"
repo="${IMAGE_REPO:-kb-bench/kb-bench}"
certs=/etc/ssl/certs/ca-certificates.crt
if [[ ! -f "${certs}" ]]; then
  echo "${certs} is missing: install the CA bundle (apt-get install ca-certificates)" >&2
  exit 1
fi
# The commit's time dates the image, so one commit gives one image digest.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
out="${IMAGE_OUT:-bin/kb-bench-image.tar}"
bindir="$(dirname "${out}")/linux-${arch}"
mkdir -p "${bindir}"
CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" \
  go build -trimpath -ldflags "-X main.version=${version}" -o "${bindir}/kb-bench" ./cmd/kb-bench
go run ./cmd/kb-bench-image -binary "${bindir}/kb-bench" -ca-certs "${certs}" -arch "${arch}" \
  -tag "${repo}:${version}" -version "${version}" -revision "${revision}" -out "${out}"
echo "built ${out} ${repo}:${version} (linux/${arch}, $(du -h "${out}" | cut -f1))" >&2
