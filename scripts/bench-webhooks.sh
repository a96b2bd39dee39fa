#!/usr/bin/env bash
# Benchmarks admission webhooks on loopback with the release binary: configmap creates with no
# webhooks, then with one validating and one mutating webhook (a Python TLS server in this
# script: the validating one allows, the mutating one answers a one-operation JSON patch),
# same run: requests/s, p50/p99 and the server's CPU time per request from /proc (the webhook
# server's own CPU is not counted).
# Prints a markdown report on stdout.
# Needs hey, python3 and openssl. Tunables: CONCURRENCY (20), REQUESTS (4000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-20}
REQUESTS=${REQUESTS:-4000}

for tool in hey python3 openssl; do
    command -v "$tool" >/dev/null || { echo "bench-webhooks.sh: $tool not found in PATH" >&2; exit 1; }
done

cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
bin="$root/target/release/kube-apiserver"

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

# The webhook server: a self-signed certificate for 127.0.0.1, threads, keep-alive.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=webhook -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$work/hook.key" -out "$work/hook.crt" 2>/dev/null
python3 - "$work" >"$work/hook.out" 2>"$work/hook.err" <<'PY' &
import base64, json, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
work = sys.argv[1]
PATCH = base64.b64encode(json.dumps(
    [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]).encode()).decode()
class Hook(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        response = {"uid": review["request"]["uid"], "allowed": True}
        if self.path.startswith("/mutate"):
            response.update({"patchType": "JSONPatch", "patch": PATCH})
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{work}/hook.crt", f"{work}/hook.key")
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
PY
pids+=($!)
hook_port=$(wait_line "$work/hook.out" "listening on" | awk '{print $3}')

echo 'admin-token,bench-admin,1000,"system:masters"' >"$work/tokens.csv"
"$bin" --data-dir="$work/data" --secure-port=0 --bind-address=127.0.0.1 \
    --token-auth-file="$work/tokens.csv" \
    >"$work/kube.out" 2>"$work/kube.err" &
pids+=($!)
pid=$!
port=$(wait_line "$work/kube.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')
base="https://127.0.0.1:$port"
create="$base/api/v1/namespaces/bench/configmaps"
echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"cm-"},"data":{"k":"v"}}' \
    >"$work/cm.json"

api() {
    python3 - "$base" "$@" <<'PY'
import json, ssl, sys, time, urllib.request
base, action = sys.argv[1], sys.argv[2]
ctx = ssl._create_unverified_context()
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer admin-token", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        text = r.read()
    return json.loads(text) if text.startswith(b"{") else text
if action == "setup":
    deadline = time.time() + 30
    while True:
        try:
            call("GET", "/readyz")
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    call("POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
elif action == "webhooks":
    hook_port, ca_file = sys.argv[3], sys.argv[4]
    ca = open(ca_file, "rb").read()
    def hook(name, path):
        return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{hook_port}/{path}",
                                 "caBundle": __import__("base64").b64encode(ca).decode()},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"]}]}
    ar = "/apis/admissionregistration.k8s.io/v1"
    call("POST", f"{ar}/validatingwebhookconfigurations",
         {"metadata": {"name": "bench"}, "webhooks": [hook("validate.bench.io", "validate")]})
    call("POST", f"{ar}/mutatingwebhookconfigurations",
         {"metadata": {"name": "bench"}, "webhooks": [hook("mutate.bench.io", "mutate")]})
    # Wait until both are in effect: a dry-run create comes back mutated.
    deadline = time.time() + 30
    while True:
        obj = call("POST", "/api/v1/namespaces/bench/configmaps?dryRun=All",
                   {"metadata": {"generateName": "probe-"}})
        if obj["metadata"].get("labels", {}).get("mutated") == "yes":
            break
        if time.time() > deadline:
            raise SystemExit("the webhooks did not take effect")
        time.sleep(0.05)
PY
}

api setup
run_creates() {
    measure_hey "$pid" -n "$REQUESTS" -c "$CONCURRENCY" -m POST -T application/json \
        -D "$work/cm.json" -H "Authorization: Bearer admin-token" "$create"
}
hey -n 1000 -c 10 -m POST -T application/json -D "$work/cm.json" \
    -H "Authorization: Bearer admin-token" "$create" >/dev/null
plain=$(run_creates)
api webhooks "$hook_port" "$work/hook.crt"
hey -n 1000 -c 10 -m POST -T application/json -D "$work/cm.json" \
    -H "Authorization: Bearer admin-token" "$create" >/dev/null
hooked=$(run_creates)

echo "### Admission webhooks (release build, $(nproc) cores, $REQUESTS creates, $CONCURRENCY connections, HTTP/1.1, webhook server in Python on loopback)"
echo
echo "| creates of a configmap | requests/s | p50 ms | p99 ms | non-2xx | server CPU µs/request |"
echo "|---|---|---|---|---|---|"
read -r rps p50 p99 bad cpu <<<"$plain"
echo "| no webhooks | $rps | $p50 | $p99 | $bad | $cpu |"
read -r rps p50 p99 bad cpu <<<"$hooked"
echo "| one validating + one mutating webhook | $rps | $p50 | $p99 | $bad | $cpu |"
