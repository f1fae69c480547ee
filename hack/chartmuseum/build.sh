#!/usr/bin/env bash
# Builds ChartMuseum (the `chartmuseum` binary, the Helm chart repository
# server with an upload API that Alauda's Captain runs and violet uploads
# to) from its Go module and prints the binary's path, cached by version:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/chartmuseum/<version>/chartmuseum
#
# A second run only prints the path. The module's go.mod names itself
# helm.sh/chartmuseum, and the module proxy serves it as
# github.com/helm/chartmuseum: it is downloaded under that path and built
# inside a writable copy of the extracted module (cmd/chartmuseum), so its
# own go.mod and go.sum pin every dependency.
#
# Usage: PUBLISH_CHARTMUSEUM="$(hack/chartmuseum/build.sh)" go test ./internal/pipeline/ -run ChartMuseum
#        hack/chartmuseum/build.sh [VERSION]  (default v0.16.3, or $CHARTMUSEUM_VERSION)
# Needs: go 1.26, the Go module proxy.
set -euo pipefail

version="${1:-${CHARTMUSEUM_VERSION:-v0.16.3}}"
case "$version" in
  v[0-9]*.*.*) ;;
  *) echo "build.sh: version must look like v0.16.3, got $version" >&2; exit 2 ;;
esac
out="${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/chartmuseum/$version"
if [ -x "$out/chartmuseum" ]; then
  echo "$out/chartmuseum"
  exit 0
fi

mkdir -p "$out"
work="$(mktemp -d "$out/../build-$version.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mod="github.com/helm/chartmuseum"
dir="$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ ! -f "$dir/go.mod" ]; then
  echo "build.sh: could not download $mod@$version from the module proxy" >&2
  exit 2
fi
echo "build.sh: building chartmuseum $version" >&2
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(
  cd "$work/src"
  CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -gcflags=all=-l \
    -ldflags "-s -w -X main.Version=${version#v}" -o "$out/chartmuseum.tmp" ./cmd/chartmuseum
)
mv "$out/chartmuseum.tmp" "$out/chartmuseum"
echo "$out/chartmuseum"
