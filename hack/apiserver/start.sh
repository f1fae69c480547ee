#!/usr/bin/env bash
# Starts a throwaway API server for trying the catalog by hand: Debian's etcd
# and kube-apiserver (built and cached by build.sh) on free loopback ports,
# RBAC on, a static admin token. It writes a kubeconfig, installs the CRDs of
# ../shared/crds when kubectl is there and waits until each reports
# Established (START_CRD_TIMEOUT seconds, default 60), and runs until Ctrl-C,
# then removes everything it made.
#
#   hack/apiserver/start.sh [CRD_DIR]
#   export KUBECONFIG=<the path it prints>
#   kubectl apply --server-side --dry-run=server -R -f <catalog>/rendered/global
#   publish adopt --namespace cpaas-system
#
# The tests (test/e2e/apiserver_test.go) start their own the same way.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
crds="${1:-$here/../../../shared/crds}"
command -v etcd >/dev/null || { echo "start.sh: needs etcd: apt-get install -y etcd-server" >&2; exit 2; }
bin="$("$here/build.sh")"

dir="$(mktemp -d /tmp/kube-apiserver-XXXXXX)"
pids=()
cleanup() {
  trap - EXIT INT TERM
  # kube-apiserver first, then etcd; SIGKILL what is still there after 10 s.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || continue
    for _ in $(seq 20); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.5; done
    kill -9 "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A free loopback port: nothing answers there (checked), chosen at random.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "start.sh: no free port found" >&2; exit 2
}
client="$(free_port)"; peer="$(free_port)"; port="$(free_port)"
etcd --name local --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
  --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
  --initial-cluster "local=http://127.0.0.1:$peer" --unsafe-no-fsync --log-level warn >"$dir/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
echo "$token,admin,admin,\"system:masters\"" >"$dir/tokens.csv"
"$bin" --etcd-servers "http://127.0.0.1:$client" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
  --cert-dir "$dir/certs" --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$dir/sa.key" --service-account-signing-key-file "$dir/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
  --enable-priority-and-fairness=false --profiling=false >"$dir/kube-apiserver.log" 2>&1 &
pids+=($!)

cat >"$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $dir/certs/apiserver.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
KC

echo "start.sh: waiting for kube-apiserver on 127.0.0.1:$port" >&2
for _ in $(seq 600); do
  if [ -f "$dir/certs/apiserver.crt" ] &&
     curl -sf --cacert "$dir/certs/apiserver.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
    break
  fi
  kill -0 "${pids[1]}" 2>/dev/null || { tail -20 "$dir/kube-apiserver.log" >&2; exit 2; }
  sleep 0.5
done
# established NAME...: polls each CRD (type/name, as `kubectl apply -o name`
# prints it) until its Established condition is True, for at most
# $START_CRD_TIMEOUT seconds (default 60) in all. It reads the condition with
# a JSONPath filter and takes any failure of the read (a CRD whose status the
# API server has not written yet has conditions: null, which some kubectl
# versions report as an error) as "not yet", so the wording of kubectl does
# not matter. Exit 2 names the CRD still not Established and kubectl's last
# answer about it.
established() {
  local deadline=$((SECONDS + ${START_CRD_TIMEOUT:-60})) crd got
  for crd in "$@"; do
    while :; do
      got="$(KUBECONFIG="$dir/kubeconfig" kubectl get "$crd" \
        -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>&1)" || true
      [ "$got" = True ] && break
      if ((SECONDS >= deadline)); then
        echo "start.sh: $crd not Established after ${START_CRD_TIMEOUT:-60} s (kubectl: ${got:-no Established condition yet})" >&2
        exit 2
      fi
      sleep 0.5
    done
  done
}
if command -v kubectl >/dev/null && [ -d "$crds" ]; then
  names="$(KUBECONFIG="$dir/kubeconfig" kubectl apply --server-side -f "$crds" -o name)"
  echo "$names" >&2
  # shellcheck disable=SC2086 # one CRD a word
  established $names
fi
echo "$dir/kubeconfig"
echo "start.sh: ready; KUBECONFIG=$dir/kubeconfig; Ctrl-C stops it" >&2
wait
