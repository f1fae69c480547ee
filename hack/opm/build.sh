#!/usr/bin/env bash
# Builds opm (operator-registry's CLI) for the OLM integration tests
# (internal/olm TestCatalogImageOpm) and prints the binary's path.
#
# The binary is cached outside the repo, keyed by version:
#   ${OPM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/opm}/<version>/opm
# A second call only prints the path. It is built from the module proxy in a
# throw-away module with operator-registry's own dependency versions (not
# this repo's go.mod), with the containers_image_openpgp tag so that no
# gpgme C library is needed.
#
# Usage: OPM="$(hack/opm/build.sh)" go test ./internal/olm/
set -euo pipefail

version="${OPM_VERSION:-v1.73.0}"
cache="${OPM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/opm}/$version"
bin="$cache/opm"

if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(
  cd "$work"
  go mod init opmbuild >/dev/null 2>&1
  GOFLAGS=-mod=mod go get "github.com/operator-framework/operator-registry@$version" >&2
  # -gcflags=all=-l: no inlining, a cold build about a third cheaper in CPU
  # (measured on Gitea: 406 s instead of 640 s) for a binary a little slower.
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -tags containers_image_openpgp -trimpath -gcflags=all=-l \
    -o "$bin.tmp" github.com/operator-framework/operator-registry/cmd/opm >&2
)
mv "$bin.tmp" "$bin"
echo "build.sh: opm $version built cold in ${SECONDS}s (cached from now on)" >&2
echo "$bin"
