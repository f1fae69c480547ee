#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller (only these two:
# the catalog needs a GitRepository or OCIRepository and a Kustomization)
# from their Go modules, extracts their CRDs from the same modules, and
# prints the directory that holds them, cached by version:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/flux/<version>/
#     source-controller  kustomize-controller  crds/*.yaml
#
# A second run only prints the directory. Each controller's go.mod replaces
# its api module with ./api, which the module zip does not carry: the build
# runs in a writable copy of the module with that replace dropped, so the
# api module comes from the module proxy at the version the go.mod already
# requires (the same version). The other replace lines stay.
#
# One more replace, for v1.9.6 only: the module proxy this project reaches
# refuses github.com/fluxcd/pkg/artifact v0.18.3 (403, "not available"),
# which source-controller v1.9.6 requires; it serves v0.18.0, the same minor
# version, which source-controller v1.9.6 builds against. See pins below.
#
# Usage: PUBLISH_FLUX="$(hack/flux/build.sh)" go test ./test/e2e/ -run Flux
#        hack/flux/build.sh [VERSION]      (default v1.9.6, or $FLUX_VERSION)
# Needs: go 1.26 (v1.9.x declares go 1.26.0; v1.10 needs 1.27), the Go
# module proxy.
set -euo pipefail

version="${1:-${FLUX_VERSION:-v1.9.6}}"
case "$version" in
  v[0-9]*.*.*) ;;
  *) echo "build.sh: version must look like v1.9.6, got $version" >&2; exit 2 ;;
esac
controllers=(source-controller kustomize-controller)

# pins prints the "-replace=MODULE=MODULE@VERSION" edits a controller at a
# version needs to build from the module proxy this project reaches.
pins() {
  case "$1@$2" in
    source-controller@v1.9.6) echo "-replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0" ;;
  esac
}
out="${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/flux/$version"

cached=1
for c in "${controllers[@]}"; do
  [ -x "$out/$c" ] || cached=0
done
[ -d "$out/crds" ] || cached=0
if [ "$cached" = 1 ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$out"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
crds="$work/crds"
mkdir -p "$crds"
echo "build.sh: building Flux source-controller and kustomize-controller $version (takes a while the first time)" >&2
for c in "${controllers[@]}"; do
  mod="github.com/fluxcd/$c"
  dir="$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [ ! -f "$dir/go.mod" ]; then
    echo "build.sh: could not download $mod@$version from the module proxy" >&2
    exit 2
  fi
  cp -r "$dir" "$work/$c"
  chmod -R u+w "$work/$c"
  (
    cd "$work/$c"
    # shellcheck disable=SC2046 # pins prints whole flags without spaces
    go mod edit -dropreplace="$mod/api" -require="$mod/api@$version" $(pins "$c" "$version")
    # -mod=mod: go.sum gains the api module's sums (the replace kept them out).
    # -gcflags=all=-l: no inlining, a cold build about a third cheaper in CPU
    # (measured on Gitea: 406 s instead of 640 s) for a binary a little slower.
    GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -gcflags=all=-l -ldflags "-s -w" -o "$out/$c.tmp" .
  )
  cp "$work/$c"/config/crd/bases/*.yaml "$crds/"
done
rm -rf "$out/crds"
mv "$crds" "$out/crds"
for c in "${controllers[@]}"; do
  mv "$out/$c.tmp" "$out/$c"
done
echo "build.sh: Flux controllers $version built cold in ${SECONDS}s (cached from now on)" >&2
echo "$out"
