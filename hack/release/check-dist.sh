#!/usr/bin/env bash
# check-dist.sh: `make dist` for this machine's platform only, into a
# temporary directory, then checks what a release needs: both binaries
# report the injected version, SHA256SUMS matches every archive, the chart
# archive carries the version, and the krew manifest names the archive with
# its checksum, and that a VERSION that is not vX.Y.Z gets no manifest. Run by `make dist-check`; not part of `make test` (the
# -trimpath builds share little with the build cache: minutes, not seconds).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
go=${GO:-go}
os=$($go env GOOS) arch=$($go env GOARCH)
version=v9.8.7-check
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "dist-check: $*" >&2; exit 1; }

git check-ignore -q dist/ || fail "dist/ is not git-ignored"
make --no-print-directory dist DIST="$tmp/dist" DIST_PLATFORMS="$os/$arch" VERSION="$version" \
	RELEASE_URL="https://example.invalid/$version" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make dist failed"; }
cd "$tmp/dist"

for bin in kubectl-kick kick-manager; do
	archive="${bin}_${version}_${os}_${arch}.tar.gz"
	[[ -f $archive ]] || fail "no $archive"
	mkdir -p "$tmp/$bin" && tar -xzf "$archive" -C "$tmp/$bin"
	got=$("$tmp/$bin/$bin" --version)
	[[ $got == "$version" ]] || fail "$bin --version printed '$got', want $version"
done

sha256sum --quiet -c SHA256SUMS || fail "SHA256SUMS does not match"
[[ $(wc -l <SHA256SUMS) -eq 3 ]] || fail "SHA256SUMS has $(wc -l <SHA256SUMS) lines, want 3 (two archives, the chart)"

chart=kick-9.8.7-check.tgz
grep -q " $chart\$" SHA256SUMS || fail "SHA256SUMS lacks $chart"
tar -xzf "$chart" -C "$tmp" kick/Chart.yaml kick/values.yaml kick/templates/deployment.yaml
grep -qx "version: 9.8.7-check" "$tmp/kick/Chart.yaml" || fail "chart version not set"
grep -qx "appVersion: $version" "$tmp/kick/Chart.yaml" || fail "chart appVersion not set"

sum=$(awk -v a="kubectl-kick_${version}_${os}_${arch}.tar.gz" '$2 == a {print $1}' SHA256SUMS)
grep -qx "    sha256: $sum" kick.yaml || fail "kick.yaml lacks the archive's sha256 $sum"
grep -qx "    uri: https://example.invalid/$version/kubectl-kick_${version}_${os}_${arch}.tar.gz" kick.yaml || fail "kick.yaml lacks the archive's uri"
grep -qx "  version: $version" kick.yaml || fail "kick.yaml lacks the version"
grep -q '{{' kick.yaml && fail "kick.yaml has unfilled placeholders"
[[ $(grep -c '^  - selector:' kick.yaml) -eq 1 ]] || fail "kick.yaml should list exactly the one platform built"

# Between release tags VERSION is a commit, which krew refuses: no manifest.
commit=0abc123-dirty
make --no-print-directory -C "$root" dist DIST="$tmp/dist-commit" DIST_PLATFORMS="$os/$arch" VERSION="$commit" \
	RELEASE_URL="https://example.invalid/$commit" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make dist VERSION=$commit failed"; }
[[ -e $tmp/dist-commit/kick.yaml ]] && fail "make dist VERSION=$commit wrote a krew manifest krew would refuse"
grep -q "no krew manifest: VERSION $commit is not vMAJOR.MINOR.PATCH" "$tmp/log" || { cat "$tmp/log"; fail "make dist VERSION=$commit did not say why it wrote no krew manifest"; }
echo "dist-check: ok ($os/$arch, $version; no krew manifest for $commit)"
