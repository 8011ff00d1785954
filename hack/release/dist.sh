#!/usr/bin/env bash
# dist.sh: the release build behind `make dist`. For each platform of
# DIST_PLATFORMS (GOOS/GOARCH pairs) it builds kick-manager and kubectl-kick
# (CGO_ENABLED=0, -trimpath, VERSION injected as main.version) and packs each
# into NAME_VERSION_OS_ARCH.tar.gz. It packages the Helm chart as
# kick-CHARTVERSION.tgz (with helm when installed, else with tar in the
# layout `helm package` writes), writes SHA256SUMS over every archive, and
# fills the krew manifest template plugins/kick.yaml into DIST/kick.yaml.
#
# Environment: VERSION, DIST (output directory, emptied first),
# DIST_PLATFORMS, RELEASE_URL (where the archives will be downloaded from),
# GO (the go command).
set -euo pipefail

version=${VERSION:?VERSION is required}
out=${DIST:?DIST is required}
platforms=${DIST_PLATFORMS:?DIST_PLATFORMS is required}
release_url=${RELEASE_URL:?RELEASE_URL is required}
go=${GO:-go}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

if [[ ! $version =~ ^[0-9A-Za-z][0-9A-Za-z._+-]*$ ]]; then
	echo "dist: VERSION $version is not a plain version string (letters, digits, . _ + -)" >&2
	exit 1
fi

rm -rf "$out"
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Archives are reproducible: fixed owner, order and mtime (the commit's).
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
pack() { # pack ARCHIVE DIR: DIR's contents into ARCHIVE
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$2" -cf - . | gzip -n >"$1"
}

ldflags="-s -w -X main.version=$version"
for p in $platforms; do
	os=${p%/*} arch=${p#*/}
	if [[ -z $os || -z $arch || $p != */* ]]; then
		echo "dist: platform $p is not GOOS/GOARCH" >&2
		exit 1
	fi
	echo "dist: $os/$arch"
	mkdir -p "$stage/$os-$arch/kubectl-kick" "$stage/$os-$arch/kick-manager"
	GOOS=$os GOARCH=$arch CGO_ENABLED=0 $go build -trimpath -ldflags "$ldflags" \
		-o "$stage/$os-$arch/kubectl-kick/kubectl-kick" ./cmd/kubectl-kick
	# The lean manager, as in `make build` (the Argo CD build is in the image).
	GOOS=$os GOARCH=$arch CGO_ENABLED=0 $go build -trimpath -ldflags "$ldflags" -tags noargocd,grpcnotrace \
		-o "$stage/$os-$arch/kick-manager/kick-manager" ./cmd/kick-manager
	pack "$out/kubectl-kick_${version}_${os}_${arch}.tar.gz" "$stage/$os-$arch/kubectl-kick"
	pack "$out/kick-manager_${version}_${os}_${arch}.tar.gz" "$stage/$os-$arch/kick-manager"
done

# The chart's version must be SemVer 2: a release tag vX.Y.Z[-pre] gives
# X.Y.Z[-pre]; anything else (a commit) becomes a pre-release of the
# version in Chart.yaml, e.g. 0.1.0-g5df6e83-dirty.
chart=deploy/chart/kick
if [[ $version =~ ^v?([0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?)$ ]]; then
	chart_version=${BASH_REMATCH[1]}
else
	chart_version="$(sed -n 's/^version: *//p' "$chart/Chart.yaml")-g${version}"
fi
if command -v helm >/dev/null; then
	helm package "$chart" --version "$chart_version" --app-version "$version" -d "$out"
else
	# What `helm package` writes: a gzipped tar of the chart's directory
	# under its name, without what .helmignore lists, with version and
	# appVersion set in Chart.yaml.
	echo "dist: helm not found; packing the chart with tar"
	mkdir -p "$stage/chart"
	excludes=()
	while read -r pattern; do
		[[ -z $pattern || $pattern == \#* ]] || excludes+=(--exclude="$pattern")
	done <"$chart/.helmignore"
	tar -C "$(dirname "$chart")" "${excludes[@]}" -cf - kick | tar -C "$stage/chart" -xf -
	sed -i -e "s/^version: .*/version: $chart_version/" -e "s/^appVersion: .*/appVersion: $version/" "$stage/chart/kick/Chart.yaml"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage/chart" -cf - kick | gzip -n >"$out/kick-$chart_version.tgz"
fi

(cd "$out" && sha256sum -- *.tar.gz *.tgz >SHA256SUMS)

# The krew manifest: the template's header, then its platform entry once
# for each kubectl-kick archive, with that archive's URI and checksum.
# krew accepts only a SemVer spec.version, so between release tags (VERSION
# a commit such as 41afe61-dirty) no manifest is written.
template=plugins/kick.yaml
if [[ ! $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]]; then
	echo "dist: no krew manifest: VERSION $version is not vMAJOR.MINOR.PATCH (tag the release, e.g. git tag v0.2.0, or pass VERSION=v0.2.0)" >&2
	echo "dist: wrote $out:"
	(cd "$out" && ls -l)
	exit 0
fi
{
	sed -n '1,/^  platforms:$/p' "$template" | grep -v '^#' | sed "s|{{VERSION}}|$version|g"
	for p in $platforms; do
		os=${p%/*} arch=${p#*/}
		archive="kubectl-kick_${version}_${os}_${arch}.tar.gz"
		sum=$(awk -v a="$archive" '$2 == a {print $1}' "$out/SHA256SUMS")
		sed -n '/^  platforms:$/,$p' "$template" | sed '1d' | grep -v '^ *#' |
			sed -e "s|{{URL}}|$release_url|g" -e "s|{{VERSION}}|$version|g" -e "s|{{OS}}|$os|g" \
				-e "s|{{ARCH}}|$arch|g" -e "s|{{SHA256}}|$sum|g"
	done
} >"$out/kick.yaml"

echo "dist: wrote $out:"
(cd "$out" && ls -l)
