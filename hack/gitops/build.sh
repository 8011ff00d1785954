#!/usr/bin/env bash
# Builds the real GitOps controllers the end-to-end tests and the GitOps demo
# run, from the Go module proxy, and caches them in the directory given as $1
# (bin/gitops): Argo CD's multi-call binary (with argocd-application-controller
# and argocd-repo-server links naming the components it runs), Flux's
# source-controller and kustomize-controller, and the source-controller CRDs,
# and the Argo Rollouts controller (argo-rollouts) with its analysis and
# experiment CRDs (argo-rollouts-crds).
#
# The pinned versions live in the wrapper modules next to this script; each
# artefact is rebuilt only when missing or when its wrapper go.mod changes.
# On 2 cores a cold build takes about half an hour (see README).
set -euo pipefail

out=${1:?usage: build.sh OUTPUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
export GOFLAGS=-mod=mod

mkdir -p "$out"
out=$(cd "$out" && pwd) # the builds run in the wrapper directories
log() { printf '[gitops] %s\n' "$*"; }
# fresh NAME STAMP: $out/NAME exists and was built from STAMP.
fresh() { [[ -e "$out/$1" ]] && [[ "$(cat "$out/.$1.stamp" 2>/dev/null)" == "$2" ]]; }
stamp() { echo "$2" >"$out/.$1.stamp"; }
modstamp() { sha256sum "$here/$1/go.mod" | cut -c1-16; }
build() { # build NAME WRAPPER PACKAGE
  local name=$1 dir=$2 pkg=$3 start=$SECONDS
  if fresh "$name" "$(modstamp "$dir")"; then return; fi
  log "building $name from $pkg (once; cached in $out)"
  (cd "$here/$dir" && go build -trimpath -ldflags "-s -w" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  stamp "$name" "$(modstamp "$dir")"
  log "  $name built in $((SECONDS - start))s"
}

build argocd argocd github.com/argoproj/argo-cd/v3/cmd
# The multi-call binary picks its component from the name it is called by.
for c in argocd-application-controller argocd-repo-server; do ln -sfn argocd "$out/$c"; done
# The repo-server runs git-verify-wrapper.sh (from $PATH) on every commit it
# renders, GPG or not; upstream's image installs it from the module's hack/.
argo_dir=$(cd "$here/argocd" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
for w in git-verify-wrapper.sh gpg-wrapper.sh; do
  install -m 0755 "$argo_dir/hack/$w" "$out/$w"
done
build source-controller source-controller github.com/fluxcd/source-controller
build kustomize-controller kustomize-controller github.com/fluxcd/kustomize-controller
build argo-rollouts argo-rollouts github.com/argoproj/argo-rollouts/cmd/rollouts-controller

# source-controller's CRDs (GitRepository, ...); the Kustomization CRD comes
# with the control plane's upstream CRDs (make control-plane).
crd_stamp=$(modstamp source-controller)
if ! fresh crds "$crd_stamp"; then
  dir=$(cd "$here/source-controller" && go list -m -f '{{.Dir}}' github.com/fluxcd/source-controller)
  rm -rf "$out/crds" && mkdir -p "$out/crds"
  cp "$dir"/config/crd/bases/*.yaml "$out/crds/"
  chmod u+w "$out"/crds/*.yaml
  stamp crds "$crd_stamp"
  log "source-controller CRDs collected from $dir"
fi
# The Rollouts controller watches AnalysisRuns, AnalysisTemplates,
# ClusterAnalysisTemplates and Experiments; the Rollout CRD comes with the
# control plane's upstream CRDs, of the same version.
ro_stamp=$(modstamp argo-rollouts)
if ! fresh argo-rollouts-crds "$ro_stamp"; then
  dir=$(cd "$here/argo-rollouts" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-rollouts)
  rm -rf "$out/argo-rollouts-crds" && mkdir -p "$out/argo-rollouts-crds"
  for f in analysis-run analysis-template cluster-analysis-template experiment; do
    cp "$dir/manifests/crds/$f-crd.yaml" "$out/argo-rollouts-crds/"
  done
  chmod u+w "$out"/argo-rollouts-crds/*.yaml
  stamp argo-rollouts-crds "$ro_stamp"
  log "Argo Rollouts' analysis and experiment CRDs collected from $dir"
fi
log "ready: $out"
