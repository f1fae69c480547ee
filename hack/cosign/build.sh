#!/usr/bin/env bash
# Builds the cosign CLI (only github.com/sigstore/cosign/v3/cmd/cosign) from
# its Go module and prints the path of the binary, cached by version outside
# the repo:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/cosign/<version>/cosign
#
# A second call only prints the path. The build runs in a scratch module
# that requires cosign at <version>, with -trimpath and CGO off, so cosign's
# own packages and sigstore-go, sigstore, protobuf-specs and
# go-containerregistry are at the versions cosign's go.mod names.
#
# Cheaper on CI: .ci/run builds Flux's source-controller first
# (hack/flux/build.sh, also -trimpath, CGO off), which compiles a large part
# of what cosign needs (Kubernetes client-go, gRPC, the cloud SDKs, OPA...),
# at versions a few patch or minor releases apart. Every module of cosign's
# build that source-controller's go.mod also requires is required here at
# source-controller's version too (minimal version selection keeps the
# higher of the two, so nothing goes below what cosign asks for): the
# packages whose whole dependency graph then matches come out of the Go
# build cache. For cosign v3.1.3 and Flux v1.9.6, 23 modules move up
# (k8s.io/api, apimachinery, client-go v0.36.2 -> v0.36.4, gRPC 1.82.0 ->
# 1.82.1, golang.org/x/crypto, sys, text..., the AWS ECR and Azure
# autorest clients); cosign itself (kept at <version>, checked), sigstore-go,
# sigstore, protobuf-specs and go-containerregistry do not move.
# COSIGN_ALIGN=0 builds with cosign's go.mod alone.
#
# Cost, measured on 2 shared cores (go1.26.8, modules already downloaded):
# with an empty build cache 6.5 min wall, 495 s of CPU (412 user + 83 sys);
# 14.5 min wall and 545 s of CPU for cosign's go.mod alone under a load of
# 10. Of the 470 s of compile CPU, the standard library is 62 s; after Flux,
# its packages and 176 s more come out of the cache (87 s without the
# alignment), leaving about 235 s of CPU, link included. The shared packages
# are the ones `go list -trimpath -deps -f '{{.Stale}}'` of source-controller
# reports up to date in a cache this script filled (900 of its 2352).
#
# The test that uses it: test/e2e/cosign_test.go (the real verifier accepts
# our signatures).
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
flux="${FLUX_VERSION:-v1.9.6}" # the source-controller hack/flux/build.sh builds
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
  export GOFLAGS=-mod=mod
  go get "github.com/sigstore/cosign/v3@$version" >&2
  if [ "${COSIGN_ALIGN:-1}" != 0 ]; then
    scmod="$(go mod download -json "github.com/fluxcd/source-controller@$flux" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
    if [ -f "$scmod" ]; then
      go list -m -f '{{.Path}}' all > modules.txt
      # The require lines of source-controller's go.mod ("path version"),
      # for the modules cosign's build has, but cosign itself.
      pins="$(awk 'NR == FNR { have[$1] = 1; next }
        /^require \(/ { req = 1; next }
        req && /^\)/ { req = 0; next }
        /^require / { $1 = ""; sub(/^ /, "") }
        (req || NF == 2) && ($1 in have) && $1 != "github.com/sigstore/cosign/v3" { print "-require=" $1 "@" $2 }' \
        modules.txt "$scmod")"
      # shellcheck disable=SC2086 # one -require=path@version per word
      [ -z "$pins" ] || go mod edit $pins
      rm modules.txt
    else
      echo "build.sh: no go.mod for github.com/fluxcd/source-controller@$flux: building with cosign's go.mod alone" >&2
    fi
  fi
  # The version `cosign version` prints, as cosign's Makefile sets it.
  ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version"
  # -gcflags=all=-l: no inlining, a cold build about a third cheaper in CPU
  # (measured on Gitea: 406 s instead of 640 s) for a binary a little slower.
  CGO_ENABLED=0 nice -n 10 go build -trimpath -gcflags=all=-l -ldflags "$ldflags" \
    -o "$bin.tmp" github.com/sigstore/cosign/v3/cmd/cosign >&2
  go version -m "$bin.tmp" | grep -q "github.com/sigstore/cosign/v3[[:space:]]*$version[[:space:]]" || {
    echo "build.sh: the binary is not cosign $version" >&2
    exit 2
  }
)
mv "$bin.tmp" "$bin"
echo "build.sh: cosign $version built cold in ${SECONDS}s (cached from now on)" >&2
echo "$bin"
