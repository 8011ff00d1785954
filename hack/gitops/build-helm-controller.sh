#!/usr/bin/env bash
# build-helm-controller.sh SRC OUT: build Flux's helm-controller from a
# checkout of its public source (https://github.com/fluxcd/helm-controller,
# tag v1.6.3) into the binary OUT, for the opt-in HelmRelease end-to-end
# tests (KICK_HELM_CONTROLLER=OUT, see docs/guides/flux.md). Its source and
# binary never enter this repository.
#
# The module proxy refuses github.com/fluxcd/helm-controller itself, which is
# why bin/gitops (hack/gitops/build.sh) cannot build it; its dependencies are
# served. v1.6.3 because it is the release whose HelmRelease CRD the control
# plane installs (hack/controlplane/build.sh) and it reads the
# source-controller v1.9.0 API that hack/gitops/source-controller pins.
#
# One edit: v1.6.3 replaces helm.sh/helm/v4 with Flux's fork
# github.com/fluxcd/helm/v4 v4.2.4-flux.1, which the proxy refuses (403); the
# replace is dropped, so it builds with upstream Helm v4.2.2 (what its go.mod
# requires). The fork only keeps empty lines in rendered manifests (Flux
# #1545); nothing KICK reads depends on that. Listeners are not edited: the
# harness passes 127.0.0.1 addresses on the command line.
set -euo pipefail
src=${1:?usage: build-helm-controller.sh HELM_CONTROLLER_SOURCE_DIR OUTPUT_BINARY}
out=${2:?usage: build-helm-controller.sh HELM_CONTROLLER_SOURCE_DIR OUTPUT_BINARY}
want=v1.6.3
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
cd "$src"
grep -q '^module github.com/fluxcd/helm-controller$' go.mod || { echo "$src is not a helm-controller checkout"; exit 1; }
if [[ -d .git ]] && [[ "$(git describe --tags --exact-match 2>/dev/null)" != "$want" ]]; then
  echo "$src is not at $want (git checkout $want first)"; exit 1
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
export GOFLAGS=-mod=mod
go mod edit -dropreplace helm.sh/helm/v4
go build -trimpath -ldflags "-s -w" -o "$out" .
echo "built $out from helm-controller $want (upstream Helm, without Flux's fork)"
