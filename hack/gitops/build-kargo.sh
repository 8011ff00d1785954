#!/usr/bin/env bash
# build-kargo.sh SRC OUT: build Kargo's controller from a copy of its public
# source (https://github.com/akuity/kargo) into the directory OUT, for the
# opt-in test that runs KICK's Kargo gate against the real controller
# (integration/kargo, TestKargoController; docs/guides/kargo.md).
#
# The Go module proxy cannot build github.com/akuity/kargo: the module
# requires github.com/akuity/kargo/api and .../pkg/x/client/generated at
# v0.0.0, which exist only through replace directives to its own
# directories, and the proxy answers 403 for them (and for the module's
# version list). So CI cannot build it. SRC is a git repository holding the
# release tag, such as the snapshot the fetch tool gives; inside that tree
# its replace directives apply and every other module comes from the proxy.
# Neither the source nor the binary enters this repository.
#
# It writes:
#   OUT/kargo        Kargo's control-plane binary; `kargo controller` is the
#                    controller (the API server, webhooks and garbage
#                    collector are other subcommands and are not run);
#   OUT/kargo-crds/  every Kargo CRD of the same tag. The control plane
#                    installs only Stage and Promotion; the controller also
#                    watches Freight, Warehouse, Project, ProjectConfig, ...
#
# KARGO_VERSION is the tag whose Stage and Promotion CRDs the control plane
# installs (hack/controlplane/build.sh); keep the two in step.
set -euo pipefail
src=${1:?usage: build-kargo.sh KARGO_GIT_REPOSITORY OUTPUT_DIR}
out=${2:?usage: build-kargo.sh KARGO_GIT_REPOSITORY OUTPUT_DIR}
KARGO_VERSION=${KARGO_VERSION:-v1.11.2}
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -x "$out/kargo" && -d "$out/kargo-crds" && "$(cat "$out/.kargo.stamp" 2>/dev/null)" == "$KARGO_VERSION" ]]; then
  echo "kargo $KARGO_VERSION is up to date in $out"
  exit 0
fi

# A clean tree of the pinned tag, whether SRC is a checkout or a bare git
# directory; SRC itself is never modified.
commit=$(git --git-dir="$(git -C "$src" rev-parse --absolute-git-dir)" rev-parse --verify "$KARGO_VERSION^{commit}") ||
  { echo "$src has no tag $KARGO_VERSION (fetch github:akuity/kargo again)"; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
git -C "$src" archive "$commit" | tar -x -C "$work"
grep -q '^module github.com/akuity/kargo$' "$work/go.mod" || { echo "$src is not a Kargo repository"; exit 1; }

echo "building Kargo $KARGO_VERSION ($commit) into $out (50 minutes measured on a busy 2-core machine from a cold cache)"
start=$SECONDS
vp=github.com/akuity/kargo/pkg/x/version
(cd "$work" && GOFLAGS=-mod=mod go build -trimpath \
  -ldflags "-s -w -X $vp.version=$KARGO_VERSION -X $vp.gitCommit=$commit -X $vp.gitTreeState=clean" \
  -o "$out/kargo" ./cmd/controlplane)
rm -rf "$out/kargo-crds" && mkdir -p "$out/kargo-crds"
cp "$work"/charts/kargo/resources/crds/*.yaml "$out/kargo-crds/"
echo "$KARGO_VERSION" >"$out/.kargo.stamp"
echo "built $out/kargo from Kargo $KARGO_VERSION in $((SECONDS - start))s"
