#!/usr/bin/env bash
# Mirror benchmark: `publish mirror` beside `crane copy` (one image at a
# time and 4 at a time) between two Debian docker-registry instances on free
# loopback ports, first copy and no-op rerun, with the destination
# registry's CPU time and request count. Each tool gets a fresh destination
# registry. Needs docker-registry (apt-get install -y docker-registry).
# crane is built from github.com/google/go-containerregistry/cmd/crane
# v0.22.1 into $BIN (default /tmp/bench-mirror-bin), never committed.
#
#   bench/mirror/run.sh                      # 30 images, 500 MB unique
#   IMAGES=10 UNIQUE_MB=100 bench/mirror/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/bench-mirror-bin}
mkdir -p "$BIN"
go build -o "$BIN/publish" ./cmd/publish
[ -x "$BIN/crane" ] || GOBIN="$BIN" go install github.com/google/go-containerregistry/cmd/crane@v0.22.1
go run ./bench/mirror -publish "$BIN/publish" -crane "$BIN/crane" \
  -images "${IMAGES:-30}" -unique-mb "${UNIQUE_MB:-500}" -concurrency "${CONCURRENCY:-4}"
