#!/usr/bin/env bash
# Builds the local control plane (upstream kube-apiserver, etcd and
# kube-controller-manager, which `--controller-manager` adds) from the
# source pinned in scripts/tools/{kube,etcd}/go.mod, through the Go module
# proxy, into a cache outside the clone. Skips what is already built.
#
#   KB_BENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/kb-bench)
#
# Prints the directory holding the binaries on its last line.
set -o errexit -o nounset -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Keep these in step with cluster.KubeVersion / cluster.EtcdVersion.
kube_version="v1.37.1"
etcd_version="v3.6.16"
cache_root="${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kb-bench}"
dest="${cache_root}/control-plane/${kube_version}"
mkdir -p "${dest}"

# build NAME MODULE_DIR PACKAGE [LDFLAGS]: builds into a temp file, then
# renames, so an interrupted build never leaves a half-written binary that
# looks finished; the EXIT trap removes the temp file on any way out.
tmp=""
trap 'if [[ -n "${tmp}" ]]; then rm -f "${tmp}"; fi' EXIT
trap 'exit 130' INT TERM
build() {
  local name="$1" dir="$2" pkg="$3" ldflags="-s -w ${4:-}"
  if [[ -x "${dest}/${name}" ]]; then
    echo "control-plane: ${name} already built in ${dest}" >&2
    return
  fi
  echo "control-plane: building ${name} from ${pkg} (takes minutes on first run)..." >&2
  tmp="$(mktemp "${dest}/.${name}.XXXXXX")"
  (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}" "${pkg}")
  chmod +x "${tmp}"
  mv -f "${tmp}" "${dest}/${name}"
  tmp=""
}

build etcd "${here}/tools/etcd" go.etcd.io/etcd/server/v3
# Stamp the version the way upstream's release build does, so /version and
# the results report v1.37.1 rather than a placeholder.
v="k8s.io/component-base/version"
minor="${kube_version#v1.}"; minor="${minor%%.*}"
stamp="-X ${v}.gitVersion=${kube_version} -X ${v}.gitMajor=1 -X ${v}.gitMinor=${minor} -X ${v}.gitTreeState=clean"
build kube-apiserver "${here}/tools/kube" k8s.io/kubernetes/cmd/kube-apiserver "${stamp}"
build kube-controller-manager "${here}/tools/kube" k8s.io/kubernetes/cmd/kube-controller-manager "${stamp}"
echo "${dest}"
