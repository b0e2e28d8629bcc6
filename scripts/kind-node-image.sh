#!/usr/bin/env bash
# Builds an offline kind node image (no registry, nothing pulled) from the
# project's pins: the Kubernetes programs and etcd from cluster/upstream (the
# same pins as the local control plane, built by `kb-bench local install
# --kind-node`), crictl, the CNI plugins and CoreDNS from the Go module
# proxy at the versions below, a Debian rootfs from debootstrap, and kind's
# own base-image files from the sigs.k8s.io/kind module the project pins.
# The component images (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy, CoreDNS, pause) are preloaded into the node's
# containerd as kind preloads them.
#
# The image is tagged kb-bench/kind-node:<kubernetes version>-<recipe hash>,
# the hash covering every pin and this recipe; when Docker already has that
# tag nothing is built. Intermediate results are cached under
# ${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kb-bench}/kind-node.
# Building needs root (debootstrap, file ownership) and a Docker daemon; on
# a host whose capability bounding set lacks capabilities it runs
# scripts/kind-host.sh first, which the node containers need.
#
# Use it with `kb-bench kind up --node-image REF` or `kb-bench run --target
# kind --node-image REF`. It differs from kindest/node: Debian bookworm's
# containerd 1.6 and runc 1.1, a Go stand-in for pause, no kindnetd (a static
# ptp CNI config: one node only), no local-path-provisioner.
#
# Progress goes to stderr; the image reference is the last line on stdout.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Pins of what the node holds besides the cluster/upstream programs.
crictl_version=v1.36.0
cni_plugins_version=v1.9.1
coredns_version=v1.14.6
debian_suite=bookworm
debian_mirror=${KB_BENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_packages=systemd,systemd-sysv,dbus,containerd,runc,iptables,iproute2,ca-certificates,mount,procps,kmod,conntrack,socat,ethtool,util-linux,libseccomp2,e2fsprogs,nftables,jq
# The node's slice of kind's default podSubnet (10.244.0.0/16): the first
# node gets 10.244.0.0/24 from the controller-manager.
pod_cidr=10.244.0.0/24
# kind's default pod and service subnets (v1alpha4 networking.podSubnet,
# serviceSubnet).
pod_subnet=10.244.0.0/16
service_cidr=10.96.0.0/16

say() { echo "kind-node-image: $*" >&2; }
die() {
  echo "kind-node-image: $*" >&2
  exit 2
}
now() { date +%s; }

cache=${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/kb-bench}/kind-node

command -v docker >/dev/null || die "no docker in PATH: install Docker (the node image is a Docker image)"
docker info >/dev/null 2>&1 || die "no Docker daemon answers: start dockerd (docker info fails)"
command -v jq >/dev/null || die "jq is needed: apt-get install jq"

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' cluster/upstream/kube/go.mod.txt)
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' cluster/upstream/etcd/go.mod.txt)
kind_version=$(awk '$1 == "sigs.k8s.io/kind" {print $2}' go.mod)
[[ -n "${kube_version}" && -n "${etcd_version}" && -n "${kind_version}" ]] ||
  die "cannot read the Kubernetes, etcd or kind pin from cluster/upstream/*/go.mod.txt and go.mod"
etcd_tag=${etcd_version#v}-0
go_version=$(go env GOVERSION)
goarch=$(go env GOARCH)

# The recipe hash: every pin and every file of the recipe, and the Go
# toolchain that compiles the programs.
recipe=$({
  cat "${BASH_SOURCE[0]}" scripts/kind-node/pause/main.go cluster/upstream/kube/*.txt cluster/upstream/etcd/*.txt
  echo "${go_version} ${goarch} ${kind_version}"
} | sha256sum | cut -c1-12)
tag=kb-bench/kind-node:${kube_version}-${recipe}

# host_needs_setup: the bounding set lacks capabilities and dockerd does not
# run the wrapper that kind-host.sh installs.
host_needs_setup() {
  local bound last i
  bound=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)
  last=$(cat /proc/sys/kernel/cap_last_cap)
  for ((i = 0; i <= last; i++)); do
    if (((0x${bound} >> i & 1) == 0)); then
      [[ "$(docker info --format '{{.DefaultRuntime}}')" != boundcaps ]]
      return
    fi
  done
  return 1
}
if host_needs_setup; then
  say "this host's capability bounding set is not full: preparing it with scripts/kind-host.sh"
  scripts/kind-host.sh
fi

if docker image inspect "${tag}" >/dev/null 2>&1; then
  say "${tag} is already built"
  echo "${tag}"
  exit 0
fi

[[ "$(id -u)" -eq 0 ]] || die "building the node image needs root (debootstrap, file ownership): run it as root, or sudo make kind-node-image"
if ! command -v debootstrap >/dev/null; then
  source scripts/apt.sh
  apt_install kind-node-image debootstrap
fi
for t in chroot tar gzip sha256sum; do
  command -v "${t}" >/dev/null || die "${t} is needed to build the node image: install it (coreutils, tar, gzip)"
done

# One build at a time on a machine: a second waits, then finds the image.
mkdir -p "${cache}/tmp"
exec 9>"${cache}/.lock"
if ! flock -n 9; then
  say "another build of the node image is running here: waiting for it"
  flock 9
fi
if docker image inspect "${tag}" >/dev/null 2>&1; then
  say "${tag} was built meanwhile"
  echo "${tag}"
  exit 0
fi
# What a build killed outright (kill -9) left behind: its work dir (no
# build runs now) and its container and image (named after its pid).
rm -rf "${cache}"/tmp/build.*
for c in $(docker ps -a --filter name=kb-bench-kind-node-build- --format '{{.Names}}'); do
  kill -0 "${c##*-}" 2>/dev/null || docker rm -f "${c}" >/dev/null
done
for i in $(docker images kb-bench/kind-node-build --format '{{.Repository}}:{{.Tag}}'); do
  kill -0 "${i##*-}" 2>/dev/null || docker image rm "${i}" >/dev/null
done
work=$(mktemp -d "${cache}/tmp/build.XXXXXX")
build_container=kb-bench-kind-node-build-$$
import_tag=kb-bench/kind-node-build:${recipe}-$$
jobs_started=()

# kill_tree PID: ends PID and its descendants (the background builds).
kill_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "${child}"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in "${jobs_started[@]}"; do kill_tree "${pid}"; done
  docker rm -f "${build_container}" >/dev/null 2>&1 || true
  docker image rm "${import_tag}" >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$(now)

# go_tool DIR PKG@VERSION...: go installs the packages into the cache once.
go_tool() {
  local dir=${cache}/gobin/$1 s
  shift
  [[ -e "${dir}/.done" ]] && return 0
  s=$(now)
  rm -rf "${dir}.tmp"
  mkdir -p "${dir}.tmp"
  say "building $(basename "${dir}") (go install, once)"
  if ! (cd "${work}" && GOBIN=${dir}.tmp CGO_ENABLED=0 GOWORK=off GOFLAGS='' nice go install -trimpath -ldflags='-s -w' "$@") >>"${work}/tools.log" 2>&1; then
    cat "${work}/tools.log" >&2
    exit 1
  fi
  touch "${dir}.tmp/.done"
  rm -rf "${dir}"
  mv "${dir}.tmp" "${dir}"
  say "built $(basename "${dir}") in $(($(now) - s))s"
}
tools() {
  local cni=github.com/containernetworking/plugins/plugins
  go_tool "cni-${cni_plugins_version}" "${cni}/main/ptp@${cni_plugins_version}" "${cni}/main/loopback@${cni_plugins_version}" \
    "${cni}/ipam/host-local@${cni_plugins_version}" "${cni}/meta/portmap@${cni_plugins_version}"
  go_tool "crictl-${crictl_version}" "sigs.k8s.io/cri-tools/cmd/crictl@${crictl_version}"
  go_tool "coredns-${coredns_version}" "github.com/coredns/coredns@${coredns_version}"
}

# The debootstrap rootfs, cached as a tarball per suite and package list.
rootfs_tar=${cache}/rootfs-${debian_suite}-$(echo "${debian_suite} ${debian_packages}" | sha256sum | cut -c1-12).tar
rootfs() {
  [[ -e "${rootfs_tar}" ]] && return 0
  local s dir=${work}/debootstrap
  s=$(now)
  say "debootstrap ${debian_suite} from ${debian_mirror} (network; minutes, once)"
  nice debootstrap --variant=minbase --include="${debian_packages}" "${debian_suite}" "${dir}" "${debian_mirror}" >"${work}/debootstrap.log" 2>&1 ||
    { tail -20 "${work}/debootstrap.log" >&2; die "debootstrap failed (log above): check that ${debian_mirror} is reachable, or set KB_BENCH_DEBIAN_MIRROR"; }
  rm -rf "${dir}"/var/cache/apt/archives/*.deb "${dir}"/var/lib/apt/lists/*
  tar -C "${dir}" --numeric-owner --sort=name -cf "${rootfs_tar}.tmp" .
  mv -f "${rootfs_tar}.tmp" "${rootfs_tar}"
  rm -rf "${dir}"
  say "rootfs $(basename "${rootfs_tar}") in $(($(now) - s))s"
}

# Stage 1, in parallel: the proxy tools and debootstrap in the background
# (the one network-bound), the Kubernetes programs in the foreground.
tools &
jobs_started+=($!)
tools_pid=$!
rootfs &
jobs_started+=($!)
rootfs_pid=$!

s=$(now)
kube_dir=${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/kb-bench}/control-plane/${kube_version}
programs=(etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubeadm kubelet kubectl)
missing=0
for p in "${programs[@]}"; do [[ -x "${kube_dir}/${p}" ]] || missing=1; done
if ((missing)); then
  say "building the Kubernetes ${kube_version} and etcd ${etcd_version} programs (kb-bench local install --kind-node; minutes, once)"
  kube_dir=$(nice go run -trimpath ./cmd/kb-bench local install --kind-node | tail -1)
  say "Kubernetes programs in $(($(now) - s))s"
fi
for p in "${programs[@]}"; do
  [[ -x "${kube_dir}/${p}" ]] || die "${kube_dir}/${p} is missing after kb-bench local install --kind-node"
done

pause_dir=${cache}/gobin/pause-$(cat scripts/kind-node/pause/main.go | sha256sum | cut -c1-12)-${go_version}
if [[ ! -x "${pause_dir}/pause" ]]; then
  mkdir -p "${pause_dir}"
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "${pause_dir}/pause.tmp" ./scripts/kind-node/pause
  mv -f "${pause_dir}/pause.tmp" "${pause_dir}/pause"
fi

wait "${tools_pid}" || die "building crictl, the CNI plugins or CoreDNS failed (log above)"
wait "${rootfs_pid}" || exit 2
jobs_started=()
say "inputs ready after $(($(now) - start))s"

# What kubeadm of this version expects, from its own constants.
gomodcache=$(go env GOMODCACHE)
constants=${gomodcache}/k8s.io/kubernetes@${kube_version}/cmd/kubeadm/app/constants/constants.go
kind_files=${gomodcache}/sigs.k8s.io/kind@${kind_version}/images/base/files
[[ -d "${kind_files}" ]] || go mod download sigs.k8s.io/kind
[[ -f "${constants}" ]] || (cd "${work}" && GOWORK=off GOFLAGS=-mod=mod go mod download "k8s.io/kubernetes@${kube_version}")
kubeadm_const() { sed -n "s/^[[:space:]]*$1 = \"\(.*\)\"/\1/p" "${constants}"; }
kubeadm_coredns=$(kubeadm_const CoreDNSVersion)
kubeadm_pause=$(kubeadm_const PauseVersion)
[[ "${kubeadm_coredns}" == "${coredns_version}" ]] ||
  die "kubeadm ${kube_version} deploys CoreDNS ${kubeadm_coredns:-?}, this script pins ${coredns_version}: change coredns_version in $0 to match"
[[ -n "${kubeadm_pause}" ]] || die "cannot read kubeadm's PauseVersion from ${constants}"
kind_sandbox=$(sed -n 's/^[[:space:]]*sandbox_image = "\(.*\)"/\1/p' "${kind_files}/etc/containerd/config.toml")
[[ -n "${kind_sandbox}" ]] || die "cannot read kind's sandbox_image from ${kind_files}/etc/containerd/config.toml"

# Stage 2: the node's filesystem.
s=$(now)
node=${work}/node
mkdir "${node}"
tar -C "${node}" --numeric-owner -xf "${rootfs_tar}"
# kind's base image: its files (scripts 0755, the rest 0644) and the RUN
# steps of its Dockerfile.
(cd "${kind_files}" && find etc kind usr -type f) | while read -r f; do
  mode=0644
  case "${f}" in usr/local/bin/* | kind/bin/*) mode=0755 ;; esac
  install -D -m "${mode}" "${kind_files}/${f}" "${node}/${f}"
done
chmod 0755 "${node}/kind" "${node}/kind/bin"
find "${node}/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete 2>/dev/null || true
rm -f "${node}"/lib/systemd/system/multi-user.target.wants/* "${node}"/etc/systemd/system/*.wants/* \
  "${node}"/lib/systemd/system/local-fs.target.wants/* "${node}"/lib/systemd/system/sockets.target.wants/*udev* \
  "${node}"/lib/systemd/system/sockets.target.wants/*initctl* "${node}"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"${node}/etc/systemd/journald.conf"
[[ -e "${node}/sbin/init" ]] || ln -s /usr/lib/systemd/systemd "${node}/usr/sbin/init"
# Until kube-proxy has programmed the node, a pod's packet to a service
# address (10.96.0.1, the apiserver's) is not translated and would follow
# the node's default route out of the node, and on through the host's, to
# whatever answers that address beyond this machine. The guard refuses it
# instead; a translated packet no longer matches. A routing rule for the
# pods' packets (policy routing sees the destination after kube-proxy's
# DNAT, and no iptables tool rewrites it: an iptables rule alone was once
# seen gone by the time the node was ready), and iptables rules for both
# pods (FORWARD) and the node's own processes (OUTPUT), on kind's default
# subnets.
cat >"${node}/etc/systemd/system/kb-bench-service-guard.service" <<UNIT
[Unit]
Description=Refuse packets to the service subnet ${service_cidr} that kube-proxy did not translate
Before=containerd.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/ip rule add from ${pod_subnet} to ${service_cidr} prohibit
ExecStart=/usr/sbin/iptables -w -I FORWARD -d ${service_cidr} -j REJECT
ExecStart=/usr/sbin/iptables -w -I OUTPUT -d ${service_cidr} -j REJECT

[Install]
WantedBy=multi-user.target
UNIT
chroot "${node}" systemctl enable kubelet.service containerd.service undo-mount-hacks.service kb-bench-service-guard.service >/dev/null 2>&1
chroot "${node}" systemctl mask systemd-binfmt.service >/dev/null 2>&1
mkdir -p "${node}/etc/kubernetes/manifests"
# kind's containerd unit runs /usr/local/bin/containerd; Debian's is in /usr/bin.
ln -sf /usr/bin/containerd "${node}/usr/local/bin/containerd"
chroot "${node}" ctr oci spec |
  jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
  jq 'del(.process.rlimits)' >"${node}/etc/containerd/cri-base.json"
containerd_version=$(chroot "${node}" dpkg-query -W -f '${Version}' containerd)
runc_version=$(chroot "${node}" dpkg-query -W -f '${Version}' runc)
# The node's programs where kind puts them.
for p in kubeadm kubelet kubectl; do install -m 0755 "${kube_dir}/${p}" "${node}/usr/bin/${p}"; done
install -m 0755 "${cache}/gobin/crictl-${crictl_version}/crictl" "${node}/usr/local/bin/crictl"
for p in ptp loopback host-local portmap; do
  install -D -m 0755 "${cache}/gobin/cni-${cni_plugins_version}/${p}" "${node}/opt/cni/bin/${p}"
done
# kindnetd cannot be had offline: a static CNI config for the one node.
mkdir -p "${node}/etc/cni/net.d"
jq -n --arg cidr "${pod_cidr}" '{
  cniVersion: "1.0.0", name: "kb-bench",
  plugins: [
    {type: "ptp", ipMasq: true,
     ipam: {type: "host-local", ranges: [[{subnet: $cidr}]], routes: [{dst: "0.0.0.0/0"}]}},
    {type: "portmap", capabilities: {portMappings: true}}
  ]}' >"${node}/etc/cni/net.d/10-kb-bench-ptp.conflist"
printf '%s' "${kube_version}" >"${node}/kind/version"
mkdir -p "${node}/kind/manifests"
cat >"${node}/kind/manifests/default-cni.yaml" <<EOF
# kb-bench's offline node image has no kindnetd: pods are networked by the
# static ptp config in /etc/cni/net.d (${pod_cidr}), so a cluster is one node.
apiVersion: v1
kind: ConfigMap
metadata:
  name: kb-bench-node-cni
  namespace: kube-system
data:
  cni: "static ptp + host-local (${pod_cidr}) in /etc/cni/net.d/10-kb-bench-ptp.conflist; no kindnetd: one node only"
EOF
cat >"${node}/kind/manifests/default-storage.yaml" <<'EOF'
# kb-bench's offline node image has no local-path-provisioner: a default
# StorageClass for pre-provisioned volumes only.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
say "node filesystem in $(($(now) - s))s"

# Stage 3: the component images, as one docker-archive tar (docker save's
# format) with one reproducible layer each.
s=$(now)
images=${work}/images
mkdir -p "${images}"
echo '[]' >"${images}/manifest.json"
gzips=()
# add_image LAYER_TAR ENTRYPOINT_JSON TAG...: adds an image to the archive.
add_image() {
  local layer=$1 entrypoint=$2 diff config cfg_sha
  shift 2
  diff=$(sha256sum "${layer}" | cut -d' ' -f1)
  mkdir -p "${images}/${diff}"
  # Compressed in the background, several at once (containerd reads
  # gzipped layers; the diff ID stays the digest of the tar).
  (gzip -n -1 <"${layer}" >"${images}/${diff}/layer.tar" && rm -f "${layer}") &
  gzips+=($!)
  jobs_started+=($!)
  config=$(jq -cn --arg arch "${goarch}" --arg diff "sha256:${diff}" --argjson ep "${entrypoint}" '{
    architecture: $arch, os: "linux",
    config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], Entrypoint: $ep},
    rootfs: {type: "layers", diff_ids: [$diff]},
    history: [{created_by: "kb-bench scripts/kind-node-image.sh"}]}')
  cfg_sha=$(printf '%s' "${config}" | sha256sum | cut -d' ' -f1)
  printf '%s' "${config}" >"${images}/${cfg_sha}.json"
  jq --arg cfg "${cfg_sha}.json" --arg layer "${diff}/layer.tar" '. + [{Config: $cfg, RepoTags: $ARGS.positional, Layers: [$layer]}]' \
    --args "$@" <"${images}/manifest.json" >"${images}/manifest.json.tmp"
  mv "${images}/manifest.json.tmp" "${images}/manifest.json"
}
# layer_of DIR: a reproducible layer tar of DIR's contents.
layer_of() {
  tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$1.tar" .
  echo "$1.tar"
}
# one_file NAME SRC DEST: a layer holding SRC at DEST.
one_file() {
  install -D -m 0755 "$2" "${work}/layer-$1/$3"
  layer_of "${work}/layer-$1"
}
add_image "$(one_file etcd "${kube_dir}/etcd" usr/local/bin/etcd)" null "registry.k8s.io/etcd:${etcd_tag}"
for p in kube-apiserver kube-controller-manager kube-scheduler; do
  add_image "$(one_file "${p}" "${kube_dir}/${p}" "usr/local/bin/${p}")" null "registry.k8s.io/${p}:${kube_version}"
done
add_image "$(one_file coredns "${cache}/gobin/coredns-${coredns_version}/coredns" coredns)" '["/coredns"]' \
  "registry.k8s.io/coredns/coredns:${coredns_version}"
add_image "$(one_file pause "${pause_dir}/pause" pause)" '["/pause"]' \
  "${kind_sandbox}" "registry.k8s.io/pause:${kubeadm_pause}"
# kube-proxy runs iptables and conntrack: the Debian rootfs plus the binary.
cp "${rootfs_tar}" "${work}/kube-proxy.tar"
install -D -m 0755 "${kube_dir}/kube-proxy" "${work}/layer-kube-proxy/usr/local/bin/kube-proxy"
tar -C "${work}/layer-kube-proxy" --mtime=@0 --owner=0 --group=0 --numeric-owner -rf "${work}/kube-proxy.tar" usr/local/bin/kube-proxy
add_image "${work}/kube-proxy.tar" null "registry.k8s.io/kube-proxy:${kube_version}"

# Stage 4: the node image. Import the filesystem (while the layers are
# compressed), preload the component images into its containerd (started
# by hand, as kind's build does), commit.
tar -C "${node}" --numeric-owner -c . | docker import - "${import_tag}" >/dev/null
rm -rf "${node}"
for pid in "${gzips[@]}"; do wait "${pid}" || die "compressing a component image's layer failed"; done
jobs_started=()
say "component images and the node filesystem imported in $(($(now) - s))s"
s=$(now)
docker run -d --name "${build_container}" --stop-signal SIGRTMIN+3 --entrypoint sleep --security-opt seccomp=unconfined "${import_tag}" infinity >/dev/null
docker exec "${build_container}" sh -c 'containerd >/var/log/kb-bench-build-containerd.log 2>&1 & echo $! >/run/kb-bench-build-containerd.pid'
for ((i = 0; ; i++)); do
  docker exec "${build_container}" ctr version >/dev/null 2>&1 && break
  ((i < 120)) || die "containerd did not start in the build container: $(docker exec "${build_container}" tail -5 /var/log/kb-bench-build-containerd.log)"
  sleep 0.5
done
tar -C "${images}" -c . | docker exec -i "${build_container}" \
  ctr -n k8s.io images import --all-platforms --no-unpack - >/dev/null
rm -rf "${images}"
want=("registry.k8s.io/etcd:${etcd_tag}" "registry.k8s.io/kube-apiserver:${kube_version}" "registry.k8s.io/kube-controller-manager:${kube_version}"
  "registry.k8s.io/kube-scheduler:${kube_version}" "registry.k8s.io/kube-proxy:${kube_version}" "registry.k8s.io/coredns/coredns:${coredns_version}"
  "${kind_sandbox}" "registry.k8s.io/pause:${kubeadm_pause}")
have=$(docker exec "${build_container}" ctr -n k8s.io images ls -q)
for ref in "${want[@]}"; do
  grep -qxF "${ref}" <<<"${have}" || die "${ref} is not in the node's containerd after the import"
done
# Pinned as kind pins its preloaded images (containerd 1.6's ctr import
# cannot label them itself).
docker exec "${build_container}" sh -c 'for ref; do ctr -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned >/dev/null || exit; done' sh "${want[@]}"
docker exec "${build_container}" sh -c 'pid=$(cat /run/kb-bench-build-containerd.pid); kill "$pid";
  while [ -e "/proc/$pid" ] && ! grep -q "^State:[[:space:]]*Z" "/proc/$pid/status" 2>/dev/null; do sleep 0.1; done;
  rm -rf /run/containerd /run/kb-bench-build-containerd.pid /var/log/kb-bench-build-containerd.log /tmp/*'
say "preloaded the component images in $(($(now) - s))s"
s=$(now)
# docker import and commit cannot set STOPSIGNAL, but commit keeps the
# container's: the build container was started with it.
labels=(recipe="${recipe}" kubernetes-version="${kube_version}" etcd-version="${etcd_version}" etcd-image-tag="${etcd_tag}"
  coredns-version="${coredns_version}" containerd-version="${containerd_version}" runc-version="${runc_version}"
  crictl-version="${crictl_version}" cni-plugins-version="${cni_plugins_version}" kind-base="sigs.k8s.io/kind@${kind_version}"
  debian="${debian_suite}" go-version="${go_version}")
changes=(--change 'ENV container=docker' --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change 'CMD []')
for l in "${labels[@]}"; do changes+=(--change "LABEL dev.kb-bench.${l}"); done
docker commit "${changes[@]}" "${build_container}" "${tag}" >/dev/null
docker rm -f "${build_container}" >/dev/null
docker image rm "${import_tag}" >/dev/null
say "committed ${tag} in $(($(now) - s))s ($(docker image inspect -f '{{.Size}}' "${tag}" | awk '{printf "%.0f MB", $1 / 1e6}'); $(($(now) - start))s in all)"
echo "${tag}"
