#!/usr/bin/env bash
# Benchmarks admission on loopback with the release binary: configmap creates (POST with
# generateName) through
#  1. the default admission chain, no webhooks or policies;
#  2. the same plus one validating and one mutating webhook (a TLS AdmissionReview server on
#     loopback, crates/apiserver/examples/admission_webhook.rs: it allows, and the mutating one
#     adds a label by JSONPatch);
#  3. the default chain plus three ValidatingAdmissionPolicies (CEL) bound to configmaps.
# Reports requests/s, p50/p99 and the server's CPU time per request from /proc (the webhook
# server's CPU is its own process and not counted). Prints a markdown report on stdout.
# Needs hey, python3 and openssl. Tunables: CONCURRENCY (16), DURATION (10s), APISERVER_BIN, WEBHOOK_BIN.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-16}
DURATION=${DURATION:-10s}

for tool in hey python3 openssl; do
    command -v "$tool" >/dev/null || { echo "bench-admission.sh: $tool not found in PATH" >&2; exit 1; }
done

# APISERVER_BIN: a binary to use instead of building the release one (e.g. to try the script).
if [ -n "${APISERVER_BIN:-}" ]; then
    bin=$APISERVER_BIN
else
    cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
    bin="$root/target/release/kube-apiserver"
fi
# The webhook server (Rust, so that it does not bound the rate): WEBHOOK_BIN or built here.
if [ -n "${WEBHOOK_BIN:-}" ]; then
    webhook_bin=$WEBHOOK_BIN
else
    cargo build --release --quiet -p apiserver --example admission_webhook
    webhook_bin="$root/target/release/examples/admission_webhook"
fi

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

echo 'admin-token,bench-admin,1000,"system:masters"' >"$work/tokens.csv"
"$bin" --data-dir="$work/data" --secure-port=0 --bind-address=127.0.0.1 \
    --token-auth-file="$work/tokens.csv" >"$work/kube.out" 2>"$work/kube.err" &
pids+=($!)
pid=$!
port=$(wait_line "$work/kube.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')
base="https://127.0.0.1:$port"

# A CA and the webhook server's certificate for 127.0.0.1 signed by it (the caBundle is the
# CA: rustls, unlike Go, refuses a self-signed CA certificate as the server's own).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=bench-ca" \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$work/webhook.key" \
    -out "$work/webhook.csr" 2>/dev/null
printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n' >"$work/leaf.ext"
openssl x509 -req -in "$work/webhook.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
    -CAcreateserial -days 1 -extfile "$work/leaf.ext" -out "$work/webhook.crt" 2>/dev/null
"$webhook_bin" "$work/webhook.crt" "$work/webhook.key" >"$work/webhook.out" 2>"$work/webhook.err" &
pids+=($!)
webhook_port=$(wait_line "$work/webhook.out" "webhook listening on" | awk '{print $4}')

api() {
    python3 - "$base" "$@" <<'PY'
import json, ssl, sys, time, urllib.error, urllib.request
base, action = sys.argv[1], sys.argv[2]
ctx = ssl._create_unverified_context()
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer admin-token", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        text = r.read()
    return json.loads(text) if text.startswith(b"{") else {}
probe = None
def wait(check, what):
    deadline = time.time() + 30
    last = ""
    while time.time() < deadline:
        try:
            if check():
                return
        except urllib.error.HTTPError as e:
            last = e.read().decode(errors="replace")
        time.sleep(0.05)
    sys.exit(f"bench-admission.sh: {what} did not take effect {last} {probe}")
cm = {"metadata": {"generateName": "probe-"}, "data": {"k": "v"}}
reg = "/apis/admissionregistration.k8s.io/v1"
rules = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
          "resources": ["configmaps"]}]
if action == "ready":
    wait(lambda: call("GET", "/readyz") is not None, "readiness")
    call("POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
elif action == "webhooks":
    ca = sys.argv[4]
    port = sys.argv[3]
    def hook(name, path):
        return {"name": name, "rules": rules, "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}}
    call("POST", f"{reg}/validatingwebhookconfigurations",
         {"metadata": {"name": "bench"}, "webhooks": [hook("validate.bench.example.com", "/validate")]})
    call("POST", f"{reg}/mutatingwebhookconfigurations",
         {"metadata": {"name": "bench"}, "webhooks": [hook("mutate.bench.example.com", "/mutate")]})
    def mutated():
        global probe
        probe = call("POST", "/api/v1/namespaces/bench/configmaps", cm)
        return probe.get("metadata", {}).get("labels", {}).get("mutated") == "yes"
    wait(mutated, "the mutating webhook")
elif action == "policies":
    call("DELETE", f"{reg}/validatingwebhookconfigurations/bench")
    call("DELETE", f"{reg}/mutatingwebhookconfigurations/bench")
    checks = ["object.data.size() <= 10", "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)",
              "object.metadata.generateName.startsWith('bench-') || object.metadata.generateName.startsWith('probe-')"]
    for i, expression in enumerate(checks):
        call("POST", f"{reg}/validatingadmissionpolicies", {"metadata": {"name": f"bench-{i}"},
             "spec": {"failurePolicy": "Fail",
                      "matchConstraints": {"resourceRules": rules},
                      "validations": [{"expression": expression}]}})
        call("POST", f"{reg}/validatingadmissionpolicybindings", {"metadata": {"name": f"bench-{i}"},
             "spec": {"policyName": f"bench-{i}", "validationActions": ["Deny"],
                      "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "bench"}}}}})
    bad = {"metadata": {"generateName": "other-"}}
    def refused():
        try:
            call("POST", "/api/v1/namespaces/bench/configmaps", bad)
            return False
        except urllib.error.HTTPError as e:
            return e.code in (400, 403, 422)
    wait(refused, "the policies")
PY
}

api ready
echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"bench-"},"data":{"k":"v"}}' >"$work/cm.json"
creates="$base/api/v1/namespaces/bench/configmaps"
create() {
    measure_hey "$pid" -z "$DURATION" -c "$CONCURRENCY" -m POST -T application/json \
        -D "$work/cm.json" -H "Authorization: Bearer admin-token" "$creates"
}

hey -n 1000 -c 8 -m POST -T application/json -D "$work/cm.json" \
    -H "Authorization: Bearer admin-token" "$creates" >/dev/null
plain=$(create)
api webhooks "$webhook_port" "$(base64 -w0 "$work/ca.crt")"
hooks=$(create)
api policies
policies=$(create)

row() {
    read -r rps p50 p99 bad cpu <<<"$2"
    echo "| $1 | $rps | $p50 ms | $p99 ms | $bad | $cpu µs |"
}
echo "Admission benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, hey -c $CONCURRENCY -z $DURATION, POST configmap (generateName)"
echo
echo "| chain | requests/s | p50 | p99 | failed | server CPU per create |"
echo "|---|---:|---:|---:|---:|---:|"
row "default plugins, no webhooks or policies" "$plain"
row "+ 1 validating and 1 mutating webhook (TLS, loopback)" "$hooks"
row "default plugins + 3 ValidatingAdmissionPolicies" "$policies"
