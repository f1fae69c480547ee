#!/usr/bin/env bash
# publish package (from the registry, an empty --cache, and crane's layout as
# --cache) / push beside crane pull --format oci + tar / crane push
# of the same ~36 images (~500 MiB unique), in one run, against two Debian
# docker-registry instances on free loopback ports (plain HTTP). Needs
# docker-registry (apt-get install -y docker-registry) and a crane binary
# (CRANE=/path/to/crane; build it with
#   GOBIN=/tmp/crane-bin go install github.com/google/go-containerregistry/cmd/crane@v0.22.1
# it is not part of this repo). Prints a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
CRANE=${CRANE:-/tmp/crane-bin/crane}
[ -x "$CRANE" ] || { echo "crane not found at $CRANE (see the header of $0)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
wait_addr() {
  for _ in $(seq 100); do
    addr=$(grep -o 'listening on [0-9.:]*' "$work/$1/log" | awk '{print $3}' || true)
    [ -n "$addr" ] && { echo "$addr"; return; }
    sleep 0.1
  done
  echo "docker-registry $1 did not start" >&2; cat "$work/$1/log" >&2; exit 2
}
mkdir -p "$work/src" "$work/dst"
for r in src dst; do
  cat > "$work/$r/config.yml" <<CFG
version: 0.1
log: {level: info, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/$r/data}}
http: {addr: 127.0.0.1:0}
CFG
  docker-registry serve "$work/$r/config.yml" 2> "$work/$r/log" &
  pids+=($!)
done
src=$(wait_addr src)
dst=$(wait_addr dst)
go build -o "$work/publish" ./cmd/publish
mkdir -p "$work/run"
go build -o "$work/bench" ./bench/archive
"$work/bench" -phase generate -src "$src" -work "$work/run"
"$work/bench" -phase measure -dst "$dst" -publish "$work/publish" -crane "$CRANE" -work "$work/run"
