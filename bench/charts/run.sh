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
cat > "$work/config.yml" <<CFG
version: 0.1
log: {level: info, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/data}}
http: {addr: 127.0.0.1:0}
CFG
docker-registry serve "$work/config.yml" 2> "$work/registry.log" &
reg_pid=$!
for _ in $(seq 100); do
  addr=$(grep -o 'listening on [0-9.:]*' "$work/registry.log" | awk '{print $3}' || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "docker-registry did not start" >&2; cat "$work/registry.log" >&2; exit 2; }
go build -o "$work/publish" ./cmd/publish
go run ./bench/charts -registry "$addr" -publish "$work/publish" -helm "${HELM:-}" -n "$N"
