#!/usr/bin/env bash
# Builds the cosign CLI (only github.com/sigstore/cosign/v3/cmd/cosign) from
# its Go module and prints the path of the binary, cached by version outside
# the repo:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/cosign/<version>/cosign
#
# A second call only prints the path. The build runs in a scratch module that
# requires only cosign, so every dependency is at the version cosign's own
# go.mod names (the versions cosign releases with), -trimpath, CGO off.
# The test that uses it: test/e2e/cosign_test.go (the real verifier accepts
# our signatures, issue 17).
#
# Usage: PUBLISH_COSIGN="$(hack/cosign/build.sh)" go test ./test/e2e/ -run Cosign
#        hack/cosign/build.sh [VERSION]      (default v3.1.3, or $COSIGN_VERSION)
# Needs: go 1.26 (cosign v3.1.3 declares go 1.26.0), the Go module proxy.
set -euo pipefail

version="${1:-${COSIGN_VERSION:-v3.1.3}}"
case "$version" in
  v3.*.*) ;;
  *) echo "build.sh: version must look like v3.1.3 (the module is github.com/sigstore/cosign/v3), got $version" >&2; exit 2 ;;
esac
cache="${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/cosign/$version"
bin="$cache/cosign"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "build.sh: building cosign $version (takes a while the first time)" >&2
(
  cd "$work"
  go mod init scratch.local/cosign-build >/dev/null 2>&1
  GOFLAGS=-mod=mod go get "github.com/sigstore/cosign/v3@$version" >&2
  # The version `cosign version` prints, as cosign's Makefile sets it.
  ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version"
  GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldflags" \
    -o "$bin.tmp" github.com/sigstore/cosign/v3/cmd/cosign >&2
)
mv "$bin.tmp" "$bin"
echo "build.sh: cosign $version built cold in ${SECONDS}s (cached from now on)" >&2
echo "$bin"
