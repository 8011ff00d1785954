#!/usr/bin/env bash
# build-reloader.sh SRC OUT: build stakater/Reloader, the peer `make
# bench-peers` compares KICK with, from a checkout of its public source
# (https://github.com/stakater/Reloader, tag v1.4.21) into the binary OUT.
# Its source and binary never enter this repository.
#
# Two edits, both outside what is measured:
#  - github.com/openshift/api is pinned to the version that builds with
#    current Kubernetes modules;
#  - its HTTP server (metrics, health) listens on 127.0.0.1:9090 instead of
#    every interface, so a benchmark opens nothing beyond loopback.
set -euo pipefail
src=${1:?usage: build-reloader.sh RELOADER_SOURCE_DIR OUTPUT_BINARY}
out=${2:?usage: build-reloader.sh RELOADER_SOURCE_DIR OUTPUT_BINARY}
cd "$src"
grep -q '^module github.com/stakater/Reloader' go.mod || { echo "$src is not a Reloader checkout"; exit 1; }
go mod edit -replace github.com/openshift/api=github.com/openshift/api@v0.0.0-20250411135543-10a8fa583797
sed -i 's|DefaultHttpListenAddr = ":9090"|DefaultHttpListenAddr = "127.0.0.1:9090"|' internal/pkg/constants/constants.go
grep -q 'DefaultHttpListenAddr = "127.0.0.1:9090"' internal/pkg/constants/constants.go || { echo "could not bind Reloader to loopback"; exit 1; }
GOFLAGS=-mod=mod go build -o "$out" .
echo "built $out from $(git describe --tags 2>/dev/null || echo "$src")"
