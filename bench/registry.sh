# Sourced by the bench scripts: start_registry DIR starts one Debian
# docker-registry (plain HTTP, storage in DIR/data) on a free loopback port,
# sets reg_pid and addr (host:port), and exits 2 with its log when it does
# not start. The caller's EXIT trap kills "$reg_pid".
start_registry() {
  local dir="$1"
  cat > "$dir/config.yml" <<CFG
version: 0.1
log: {level: info, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $dir/data}}
http: {addr: 127.0.0.1:0}
CFG
  docker-registry serve "$dir/config.yml" 2> "$dir/registry.log" &
  reg_pid=$!
  addr=""
  for _ in $(seq 100); do
    addr=$(grep -o 'listening on [0-9.:]*' "$dir/registry.log" | awk '{print $3}' || true)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "docker-registry did not start" >&2; cat "$dir/registry.log" >&2; exit 2; }
}
