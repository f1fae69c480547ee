#!/usr/bin/env bash
# publish package (from the registry, an empty --cache, and crane's layout as
# --cache) / push beside crane pull --format oci + tar / crane push
# of the same ~36 images (~500 MiB unique), in one run, against two Debian
# docker-registry instances on free loopback ports (plain HTTP). Needs
# docker-registry (apt-get install -y docker-registry); crane is built here
# from the go-containerregistry version of go.mod (CRANE=/path/to/crane to
# use another). Arguments go to the measure phase (-steps push: crane pull,
# package, crane push and push only). Prints a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
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
CRANE=${CRANE:-$work/crane}
[ -x "$CRANE" ] || go build -o "$CRANE" github.com/google/go-containerregistry/cmd/crane
mkdir -p "$work/run"
go build -o "$work/bench" ./bench/archive
"$work/bench" -phase generate -src "$src" -work "$work/run"
"$work/bench" -phase measure -dst "$dst" -dst-pid "${pids[1]}" -publish "$work/publish" -crane "$CRANE" -work "$work/run" "$@"
