#!/usr/bin/env bash
# Builds the Gitea server (the `gitea` binary) from its Go module and prints
# the directory that holds it, cached by version:
#
#   ${XDG_CACHE_HOME:-~/.cache}/operator-publish/gitea/<version>/
#     gitea  options/  templates/
#
# A second run only prints the path. The module (code.gitea.io/gitea, whose
# go.mod names itself gitea.dev) carries replace directives, which only take
# effect in the main module: the build runs in a writable copy of the
# downloaded module. No build tags: without "sqlite_mattn" Gitea links the
# pure-Go SQLite (modernc.org/sqlite, models/db/driver_sqlite_modernc.go), so
# CGO_ENABLED=0 needs no C compiler; without "bindata" it reads its options
# (locales, licences, .gitignore templates) and templates from disk at
# STATIC_ROOT_PATH instead of embedding them, so nothing is generated: the
# two directories are copied from the module next to the binary, and the
# test harness (internal/testenv/gitea.go) points STATIC_ROOT_PATH there. The
# frontend (public/assets, built with Node) is not built: the tests use the
# API and Git smart HTTP only.
#
# -gcflags=all=-l (no inlining) makes the cold build a third cheaper: 406 s
# of CPU instead of 640 s for compile and link (measured with the modules
# downloaded; the download itself is 20 s of CPU, 25 s wall), for a binary
# that is a little slower, which the tests do not notice (TestGitea takes
# the same few seconds).
#
# Usage: PUBLISH_GITEA="$(hack/gitea/build.sh)" go test ./internal/testenv/ -run Gitea
#        hack/gitea/build.sh [VERSION]      (default v1.27.3, or $GITEA_VERSION)
# Needs: go 1.26 (v1.27.3 declares go 1.26.4), the Go module proxy.
set -euo pipefail

version="${1:-${GITEA_VERSION:-v1.27.3}}"
case "$version" in
  v[0-9]*.*.*) ;;
  *) echo "build.sh: version must look like v1.27.3, got $version" >&2; exit 2 ;;
esac
out="${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/gitea/$version"
if [ -x "$out/gitea" ] && [ -d "$out/options" ] && [ -d "$out/templates" ]; then
  echo "$out/gitea"
  exit 0
fi

mkdir -p "$out"
work="$(mktemp -d "$out/../build-$version.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mod="code.gitea.io/gitea"
dir="$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ ! -f "$dir/go.mod" ]; then
  echo "build.sh: could not download $mod@$version from the module proxy" >&2
  exit 2
fi
echo "build.sh: building gitea $version (takes a while the first time)" >&2
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(
  cd "$work/src"
  CGO_ENABLED=0 nice -n 10 go build -trimpath -gcflags=all=-l \
    -ldflags "-s -w -X main.Version=${version#v} -X main.Tags=" -o "$out/gitea.tmp" .
)
rm -rf "$out/options" "$out/templates"
cp -r "$work/src/options" "$out/options"
cp -r "$work/src/templates" "$out/templates"
mv "$out/gitea.tmp" "$out/gitea"
echo "build.sh: gitea $version built cold in ${SECONDS}s (cached from now on)" >&2
echo "$out/gitea"
