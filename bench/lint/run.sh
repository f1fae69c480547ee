#!/usr/bin/env bash
# Lint of 1,000 bundle versions: `publish lint` beside `opm render` of the
# same bundle images, in one run against one Debian docker-registry on a
# free loopback port. Needs docker-registry (apt-get install -y
# docker-registry) and, for the comparison, an opm binary (OPM=/path/to/opm;
# it builds from github.com/operator-framework/operator-registry v1.73.0
# with -tags containers_image_openpgp).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-1000}
work=$(mktemp -d)
trap 'kill "${reg_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
. bench/registry.sh
start_registry "$work"
go build -o "$work/publish" ./cmd/publish
go run ./bench/lint -registry "$addr" -publish "$work/publish" -opm "${OPM:-}" -n "$N"
