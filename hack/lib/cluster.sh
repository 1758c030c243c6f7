# The local cluster every suite runs on: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, a kwok node and the pod runner (crates/podrunner) running that node's pods as
# processes in network namespaces on a bridge. Source it from a runner script; it sets up a
# work directory and a teardown trap.
#
# Before `local_cluster`, set: KUBE_APISERVER, ETCD, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER,
# KUBECTL, KWOK, KWOK_DIR (from gateway-conformance/install), BIN (the cargo target's debug
# directory, with podrunner built), PODRUNNER_IMAGES (an array of REPOSITORY=BINARY), KEEP
# (1 keeps a healthy cluster up at exit), FAILURE_LOGS (where logs go when the run fails).
# Ports and names may be overridden through the environment.
ETCD_PORT="${GWC_ETCD_PORT:-12379}"
APISERVER_PORT="${GWC_APISERVER_PORT:-16443}"
KWOK_PORT="${GWC_KWOK_PORT:-11250}"
NODE=kwok-node-0
# The host's address on the pod bridge: what pods reach the host at.
BRIDGE_ADDRESS=10.244.0.1
# The Services' cluster IPs (the API server's range; the `kubernetes` Service is its first).
SERVICE_CIDR=10.96.0.0/16
WORK="$(mktemp -d /tmp/gwc.XXXXXX)"
mkdir -p "$WORK/logs" "$WORK/pki"
PIDS=()
teardown() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$KEEP" = 1 ] && [ "$rc" = 0 ]; then
    log "cluster kept: export KUBECONFIG=$WORK/admin.kubeconfig; stop with: kill ${PIDS[*]}"
    return
  fi
  log "tearing down"
  # Reverse order: the provisioner stops its Envoys, the runner its pods, then the control plane.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[$i]}" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "${PIDS[$i]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${PIDS[$i]}" 2>/dev/null || true
  done
  ip link del gwc0 2>/dev/null || true
  ip link del gwcsvc0 2>/dev/null || true
  for ns in $(ip netns list | awk '/^gwc-/ {print $1}'); do ip netns del "$ns" 2>/dev/null || true; done
  if [ "$rc" != 0 ]; then
    mkdir -p "$FAILURE_LOGS"
    cp "$WORK"/logs/*.log "$FAILURE_LOGS/" 2>/dev/null || true
    # The kept logs stay on the machine; their last lines go where CI shows them.
    for f in "$WORK"/logs/*.log; do
      [ -s "$f" ] || continue
      printf '==> the last lines of %s\n' "$(basename "$f")" >&2
      tail -n 15 "$f" >&2
    done
    # What failed, and the runner's own summary (failure_summary, when it defines one), last:
    # CI shows the end of the output.
    [ ! -s "$WORK/why" ] || log "failed: $(cat "$WORK/why")"
    if declare -F failure_summary >/dev/null; then failure_summary >&2 || true; fi
    log "logs kept in $FAILURE_LOGS (not committed)"
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap teardown EXIT INT TERM
# As common.sh's, and the reason is repeated at the end of a failed run's output.
die() {
  log "$*"
  printf '%s\n' "$*" >"$WORK/why"
  exit 2
}
start() {
  local name="$1"; shift
  "$@" >"$WORK/logs/$name.log" 2>&1 &
  PIDS+=($!)
}
wait_for() {
  local what="$1" tries="$2"; shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for $what; last log lines:"
  printf 'timed out waiting for %s\n' "$what" >"$WORK/why"
  tail -n 20 "$WORK"/logs/*.log >&2 || true
  return 1
}

# The local cluster: certificates, etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, the kwok node and the pod runner.
local_cluster() {
  # A failed run's logs are the last failure's alone.
  [ -z "${FAILURE_LOGS:-}" ] || rm -rf "$FAILURE_LOGS"
  # --- certificates -------------------------------------------------------------------------------
  log "certificates"
  (
    cd "$WORK/pki"
    cert() { # name subject extensions
      openssl req -new -newkey rsa:2048 -nodes -keyout "$1-key.pem" -subj "$2" -out "$1.csr" 2>/dev/null
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
    }
    openssl req -x509 -new -newkey rsa:2048 -nodes -keyout ca-key.pem -subj "/CN=gwc-ca" -days 2 \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out ca.pem 2>/dev/null
    server="basicConstraints=CA:FALSE
  keyUsage=digitalSignature,keyEncipherment
  extendedKeyUsage=serverAuth"
    client="basicConstraints=CA:FALSE
  keyUsage=digitalSignature,keyEncipherment
  extendedKeyUsage=clientAuth"
    cert apiserver "/CN=kube-apiserver" "$server
  subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc"
    cert admin "/O=system:masters/CN=admin" "$client"
    cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
    cert kwok "/CN=$NODE" "$server
  subjectAltName=IP:127.0.0.1,DNS:localhost"
    openssl genrsa -out sa-key.pem 2048 2>/dev/null
    openssl rsa -in sa-key.pem -pubout -out sa.pub 2>/dev/null
  )
  P="$WORK/pki"
  export KUBECONFIG="$WORK/admin.kubeconfig"
  cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: gwc, cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$P/ca.pem"}}]
users: [{name: admin, user: {client-certificate: "$P/admin.pem", client-key: "$P/admin-key.pem"}}]
contexts: [{name: gwc, context: {cluster: gwc, user: admin}}]
current-context: gwc
EOF

  # --- control plane ------------------------------------------------------------------------------
  log "etcd, kube-apiserver"
  start etcd "$ETCD" --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 1))" --unsafe-no-fsync --log-level error
  start kube-apiserver "$KUBE_APISERVER" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$P/apiserver.pem" --tls-private-key-file "$P/apiserver-key.pem" --client-ca-file "$P/ca.pem" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa-key.pem" \
    --service-cluster-ip-range "$SERVICE_CIDR" --endpoint-reconciler-type none --authorization-mode Node,RBAC \
    --allow-privileged=true --feature-gates ClusterTrustBundle=true \
    --runtime-config certificates.k8s.io/v1beta1/clustertrustbundles=true \
    --kubelet-client-certificate "$P/kubelet-client.pem" \
    --kubelet-client-key "$P/kubelet-client-key.pem" --kubelet-preferred-address-types InternalIP
  wait_for kube-apiserver 240 k get --raw /readyz
  wait_for "the default namespace" 60 k get namespace default

  log "kube-controller-manager, kube-scheduler"
  start kube-controller-manager "$KUBE_CONTROLLER_MANAGER" --kubeconfig "$KUBECONFIG" \
    --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
    --root-ca-file "$P/ca.pem" --service-account-private-key-file "$P/sa-key.pem" \
    --leader-elect=false --use-service-account-credentials=false --bind-address 127.0.0.1 --secure-port 0 \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
    --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 --concurrent-service-endpoint-syncs 10 \
    --kube-api-qps 200 --kube-api-burst 400
  start kube-scheduler "$KUBE_SCHEDULER" --kubeconfig "$KUBECONFIG" \
    --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --kube-api-qps 200 --kube-api-burst 400

  # Logs answer `kubectl logs`; PortForwards (the pod runner keeps one per pod) answer
  # `kubectl port-forward`.
  log "kwok's Logs and PortForward CRDs"
  k apply --server-side -f "$KWOK_DIR/crds/kwok.x-k8s.io_logs.yaml" >/dev/null
  k apply --server-side -f "$KWOK_DIR/crds/kwok.x-k8s.io_portforwards.yaml" >/dev/null
  wait_for "the Logs and PortForward CRDs" 60 sh -c "'$KUBECTL' get logs.kwok.x-k8s.io -A && '$KUBECTL' get portforwards.kwok.x-k8s.io -A"

  # --- the node -----------------------------------------------------------------------------------
  log "node $NODE: kwok and the pod runner"
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: $NODE, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
spec:
  podCIDR: 10.244.1.0/24
  podCIDRs: [10.244.1.0/24]
EOF
  start kwok "$KWOK" --kubeconfig "$KUBECONFIG" --config "$REPO_ROOT/hack/cluster/stages.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-ip 127.0.0.1 \
    --node-port "$KWOK_PORT" --server-address "127.0.0.1:$KWOK_PORT" \
    --tls-cert-file "$P/kwok.pem" --tls-private-key-file "$P/kwok-key.pem" \
    --enable-crds Logs,PortForward --node-lease-duration-seconds 40 --cidr 10.244.1.0/24
  local images=()
  for i in "${PODRUNNER_IMAGES[@]}"; do images+=(--image "$i"); done
  # Services are served at their cluster IPs (the podrunner's userspace proxy), and pods reach
  # the API server through the `kubernetes` Service with their service account's token.
  start podrunner "$BIN/podrunner" --node-name "$NODE" --state-dir "$WORK/pods" "${images[@]}" \
    --service-cidr "$SERVICE_CIDR" --api-server "127.0.0.1:$APISERVER_PORT"
  wait_for "node $NODE Ready" 120 sh -c "'$KUBECTL' get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

k() { "$KUBECTL" "$@"; }

# certgen's Secrets in projectcontour, as its Job makes them (compact format), and the serving
# certificate's files under $WORK/certs for a controller run on the host.
certgen_secrets() {
  "$BIN/contour-certgen" --kube --namespace=projectcontour --secrets-format=compact --kubeconfig "$KUBECONFIG" >/dev/null
  mkdir -p "$WORK/certs"
  local key
  for key in ca.crt tls.crt tls.key; do
    k -n projectcontour get secret contourcert -o "jsonpath={.data.${key//./\\.}}" | base64 -d >"$WORK/certs/$key"
  done
}

# The Service projectcontour/contour leads to a controller on the host: an EndpointSlice with
# the host's bridge address and the xDS port (the cluster DNS answers with it).
contour_service_to_host() {
  k apply -f - >/dev/null <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: contour-host
  namespace: projectcontour
  labels: {kubernetes.io/service-name: contour, endpointslice.kubernetes.io/managed-by: contour-rs-tests}
addressType: IPv4
ports: [{name: xds, port: 8001, protocol: TCP}]
endpoints: [{addresses: ["$BRIDGE_ADDRESS"], conditions: {ready: true}}]
YAML
}
