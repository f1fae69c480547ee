#!/usr/bin/env bash
# Lint and image discovery of 50 chart versions (the test charts of
# internal/pipeline/testdata/charts, renamed): `publish lint` beside `helm
# template` of the same charts run one by one, in one run against one
# Debian docker-registry on a free loopback port. Needs docker-registry
# (apt-get install -y docker-registry) and, for the comparison, a helm
# binary (HELM=/path/to/helm; GOBIN=DIR go install
# helm.sh/helm/v4/cmd/helm@v4.3.2 builds the one the SDK of publish is).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-50}
work=$(mktemp -d)
trap 'kill "${reg_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
. bench/registry.sh
start_registry "$work"
go build -o "$work/publish" ./cmd/publish
go run ./bench/charts -registry "$addr" -publish "$work/publish" -helm "${HELM:-}" -n "$N"
