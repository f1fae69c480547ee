#!/usr/bin/env bash
# Builds kube-apiserver from the Go module k8s.io/kubernetes and prints the
# path of the binary. The build runs in a scratch module outside the repo
# (k8s.io/kubernetes refers to its staging modules as ./staging/..., which a
# consumer has to replace with their published versions) and the binary is
# cached by version, so a second run takes a moment:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/kube-apiserver-<version>
#
# Usage: hack/apiserver/build.sh [VERSION]     (default v1.37.2)
# Needs: go (the version k8s.io/kubernetes names, 1.26), the Go module proxy.
set -euo pipefail

version="${1:-${KUBE_APISERVER_VERSION:-v1.37.2}}"
case "$version" in
  v1.*.*) ;;
  *) echo "build.sh: version must look like v1.37.2, got $version" >&2; exit 2 ;;
esac
staging="v0.${version#v1.}"   # v1.37.2 -> v0.37.2: the staging modules' tag
cache="${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish"
bin="$cache/kube-apiserver-$version"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
scratch="$cache/build-kube-apiserver-$version"
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch"

# The replace directives: every "k8s.io/X => ./staging/src/k8s.io/X" of the
# kubernetes go.mod becomes "k8s.io/X => k8s.io/X <staging tag>".
modfile="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [ ! -f "$modfile" ]; then
  echo "build.sh: could not download the go.mod of k8s.io/kubernetes@$version" >&2
  exit 2
fi
goline="$(grep -m1 '^go ' "$modfile")"
{
  echo "module scratch.local/kube-apiserver-build"
  echo
  echo "$goline"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  sed -n "s#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 $staging#p" "$modfile"
  echo ")"
} > go.mod

# -mod=mod lets the go command fill go.sum while it resolves the graph.
pkg="k8s.io/component-base/version"
minor="${version#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
echo "build.sh: building kube-apiserver $version (takes a while the first time)" >&2
# -gcflags=all=-l: no inlining, a cold build about a third cheaper in CPU
# (measured on Gitea: 406 s instead of 640 s) for a binary a little slower.
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags=all=-l -ldflags "$ldflags" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin.tmp" "$bin"
echo "build.sh: kube-apiserver $version built cold in ${SECONDS}s (cached from now on)" >&2
cd "$cache"
rm -rf "$scratch"
echo "$bin"
