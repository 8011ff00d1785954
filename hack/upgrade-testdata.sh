#!/usr/bin/env bash
# Regenerates integration/pipeline/testdata/upgrade: the records of the
# previous release, for TestKeyLevelUpgradeFromPreviousRelease.
#
# It builds kick-manager at PREV (the last commit before key-level
# precision) into a temporary directory, never bin/, and runs
# TestCapturePreviousRelease with it on a local control plane
# (bin/k8s, see `make control-plane`): that manager observes a small
# fixture and the test writes the Secret as stored (uid, write times,
# data), the record it wrote and its fingerprint key into testdata.
#
#   hack/upgrade-testdata.sh            # PREV=bcf8ac8
#   PREV=<commit> hack/upgrade-testdata.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PREV=${PREV:-bcf8ac8}
work=$(mktemp -d /tmp/kick-prev.XXXXXX)
trap 'rm -rf "$work"' EXIT
git archive "$PREV" | tar -x -C "$work"
(cd "$work" && CGO_ENABLED=0 go build -tags noargocd,grpcnotrace -o "$work/kick-manager" ./cmd/kick-manager)
KICK_PREV_MANAGER="$work/kick-manager" KICK_K8S_BIN="${KICK_K8S_BIN:-$PWD/bin/k8s}" KICK_BIN="${KICK_BIN:-$PWD/bin}" \
  go test -count=1 -p 1 -run '^TestCapturePreviousRelease$' ./integration/pipeline/
echo "captured from $(git rev-parse --short "$PREV") into integration/pipeline/testdata/upgrade"
