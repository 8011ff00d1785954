#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy and caches it in
# the directory given as $1 (bin/k8s): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok, plus kwok's stage
# definitions and the upstream CRDs the integration tests install.
#
# Each artefact is rebuilt only when missing or when its pinned version
# changes (a stamp file records what was built). The first run takes minutes.
set -euo pipefail

out=${1:?usage: build.sh OUTPUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
export GOFLAGS=-mod=mod

# Pinned versions: change them here (and in the wrapper go.mod files).
K8S_VERSION=v1.37.0
ETCD_VERSION=v3.6.7
KWOK_VERSION=v0.8.0
# Upstream CRDs, as module@version and the file inside the module.
UPSTREAM_CRDS=(
  "github.com/argoproj/argo-cd/v3@v3.6.1 manifests/crds/application-crd.yaml"
  "github.com/argoproj/argo-cd/v3@v3.6.1 manifests/crds/appproject-crd.yaml"
  "github.com/fluxcd/kustomize-controller@v1.10.1 config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"
  "github.com/fluxcd/helm-controller@v1.6.3 config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml"
  "github.com/argoproj/argo-rollouts@v1.10.2 manifests/crds/rollout-crd.yaml"
  "sigs.k8s.io/secrets-store-csi-driver@v1.5.5 config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml"
  "sigs.k8s.io/secrets-store-csi-driver@v1.5.5 config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml"
  "github.com/akuity/kargo@v1.11.2 charts/kargo/resources/crds/kargo.akuity.io_stages.yaml"
  "github.com/akuity/kargo@v1.11.2 charts/kargo/resources/crds/kargo.akuity.io_promotions.yaml"
)

mkdir -p "$out"
log() { printf '[control-plane] %s\n' "$*"; }

# fresh NAME STAMP: true when $out/NAME exists and was built from STAMP.
fresh() { [[ -x "$out/$1" || -f "$out/$1" ]] && [[ "$(cat "$out/.$1.stamp" 2>/dev/null)" == "$2" ]]; }
stamp() { echo "$2" >"$out/.$1.stamp"; }

timed() {
  local start=$SECONDS
  "$@"
  log "  done in $((SECONDS - start))s"
}

# etcd -------------------------------------------------------------------
if ! fresh etcd "$ETCD_VERSION"; then
  log "building etcd $ETCD_VERSION (about a minute, once; cached in $out)"
  (cd "$here/etcd" && timed go build -trimpath -ldflags "-s -w" -o "$out/etcd" .)
  stamp etcd "$ETCD_VERSION"
fi

# kube_ldflags stamps the version so clients such as kubectl can parse it.
kube_ldflags() {
  local minor
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
    " -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    " -X k8s.io/component-base/version.gitTreeState=clean" \
    " -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
}

# kube-apiserver, kube-controller-manager, kube-scheduler, and kubectl for
# the demo and the tests that drive the cluster the way people do. One go
# build compiles their shared packages once and links the four in parallel.
kube_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
need_kube=false
for b in "${kube_bins[@]}"; do fresh "$b" "$K8S_VERSION" || need_kube=true; done
if $need_kube; then
  log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S_VERSION"
  log "  (10-20 minutes on 2 cores the first time; cached in $out afterwards)"
  (cd "$here/kube" && timed go build -trimpath -ldflags "$(kube_ldflags)" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl)
  for b in "${kube_bins[@]}"; do stamp "$b" "$K8S_VERSION"; done
fi

# kwok and its stage definitions ----------------------------------------
if ! fresh kwok "$KWOK_VERSION"; then
  log "building kwok $KWOK_VERSION (about 5 minutes, once; cached in $out)"
  (cd "$here/kwok" && timed go build -trimpath -ldflags "-s -w" -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok)
  stamp kwok "$KWOK_VERSION"
fi
if ! fresh kwok-stages.yaml "$KWOK_VERSION"; then
  dir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
  : >"$out/kwok-stages.yaml"
  for s in "${stages[@]}"; do
    { echo "---"; cat "$dir/kustomize/stage/$s"; } >>"$out/kwok-stages.yaml"
  done
  stamp kwok-stages.yaml "$KWOK_VERSION"
  log "kwok stages collected from $dir/kustomize/stage"
fi

# upstream CRDs ----------------------------------------------------------
crd_stamp=$(printf '%s\n' "${UPSTREAM_CRDS[@]}" | sha256sum | cut -c1-16)
if ! fresh crds "$crd_stamp"; then
  log "collecting upstream CRDs from the Go module cache"
  rm -rf "$out/crds" && mkdir -p "$out/crds"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for entry in "${UPSTREAM_CRDS[@]}"; do
    read -r mod file <<<"$entry"
    dir=$(cd "$tmp" && GOFLAGS= go mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    if [[ -z "$dir" || ! -f "$dir/$file" ]]; then
      echo "control-plane: could not find $file in module $mod" >&2
      exit 1
    fi
    cp "$dir/$file" "$out/crds/$(basename "$file")"
    chmod u+w "$out/crds/$(basename "$file")"
  done
  stamp crds "$crd_stamp"
  log "  $(ls "$out/crds" | wc -l) CRD files in $out/crds"
fi

log "ready: $out"
