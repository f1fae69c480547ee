#!/usr/bin/env bash
# Installs Mermaid (the npm package mermaid) for the test that draws the
# plan's upgrade graphs with Mermaid itself in headless Chromium
# (internal/report TestPlanMermaidInChromium) and prints the path of its
# browser bundle, mermaid.min.js.
#
# The package is cached outside the repo, keyed by version:
#   ${MERMAID_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/mermaid}/<version>/
# A second call only prints the path. npm runs no install scripts
# (--ignore-scripts); the browser bundle needs none.
#
# Usage: MERMAID_JS="$(hack/mermaid/build.sh)" go test -run TestPlanMermaidInChromium ./internal/report/
set -euo pipefail

version="${MERMAID_VERSION:-12.3.0}"
cache="${MERMAID_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/operator-publish/mermaid}/$version"
js="$cache/node_modules/mermaid/dist/mermaid.min.js"

if [ -s "$js" ]; then
  echo "$js"
  exit 0
fi

mkdir -p "$cache"
npm install --prefix "$cache" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "mermaid@$version" >&2
if [ ! -s "$js" ]; then
  echo "build.sh: mermaid $version has no dist/mermaid.min.js" >&2
  exit 1
fi
echo "build.sh: mermaid $version installed in ${SECONDS}s (cached from now on)" >&2
echo "$js"
