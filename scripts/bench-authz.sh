#!/usr/bin/env bash
# Benchmarks identity and access on loopback, with the release binary under
# --authorization-mode=Node,RBAC and 1,000 Roles and 1,000 RoleBindings loaded:
#  * a GET of a configmap as a service account (bound token, allowed by a RoleBinding) against
#    the same GET as system:masters (a --token-auth-file token), same run: requests/s, p50/p99
#    and the server's CPU time per request from /proc;
#  * SubjectAccessReview latency (POST, as system:masters, for the service account);
#  * the cost of validating a token the server has not seen (the token cache keeps successes
#    10 s, as upstream's): sequential GETs, each with a fresh service-account token, against
#    the same number with the cached admin token; server CPU per request.
# Prints a markdown report on stdout.
# Needs hey and python3. Tunables: CONCURRENCY (50), DURATION (10s), ROLES (1000),
# FRESH_TOKENS (300).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-50}
DURATION=${DURATION:-10s}
ROLES=${ROLES:-1000}
FRESH_TOKENS=${FRESH_TOKENS:-300}

command -v hey >/dev/null || { echo "bench-authz.sh: hey not found in PATH" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-authz.sh: python3 not found in PATH" >&2; exit 1; }

cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
bin="$root/target/release/kube-apiserver"

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

echo 'admin-token,bench-admin,1000,"system:masters"' >"$work/tokens.csv"
"$bin" --data-dir="$work/data" --secure-port=0 --bind-address=127.0.0.1 \
    --authorization-mode=Node,RBAC --token-auth-file="$work/tokens.csv" \
    >"$work/kube.out" 2>"$work/kube.err" &
pids+=($!)
pid=$!
port=$(wait_line "$work/kube.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')
base="https://127.0.0.1:$port"

# Objects, the service account's token and the fresh tokens, through the API.
python3 - "$base" "$ROLES" "$FRESH_TOKENS" "$work" <<'PY'
import json, ssl, sys, time, urllib.request
base, roles, fresh, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ctx = ssl._create_unverified_context()
def call(method, path, body=None, token="admin-token"):
    req = urllib.request.Request(base + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        text = r.read()
    return json.loads(text) if text.startswith(b"{") else text
deadline = time.time() + 30
while True:
    try:
        call("GET", "/readyz")
        break
    except Exception:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
for ns in ["bench"] + [f"team-{i}" for i in range(10)]:
    call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
call("POST", "/api/v1/namespaces/bench/serviceaccounts", {"metadata": {"name": "bench"}})
call("POST", "/api/v1/namespaces/bench/configmaps", {"metadata": {"name": "cm"}, "data": {"k": "v"}})
rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces"
for i in range(roles):
    ns = f"team-{i % 10}"
    call("POST", f"{rbac}/{ns}/roles", {"metadata": {"name": f"role-{i}"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"],
         "resourceNames": [f"obj-{i}"]}]})
    call("POST", f"{rbac}/{ns}/rolebindings", {"metadata": {"name": f"binding-{i}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{i}"},
        "subjects": [{"kind": "User", "name": f"user-{i}"},
                     {"kind": "Group", "name": f"group-{i % 50}"}]})
call("POST", f"{rbac}/bench/roles", {"metadata": {"name": "reader"}, "rules": [
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]})
call("POST", f"{rbac}/bench/rolebindings", {"metadata": {"name": "reader"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
    "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "bench"}]})
def token():
    return call("POST", "/api/v1/namespaces/bench/serviceaccounts/bench/token",
                {"spec": {"expirationSeconds": 3600}})["status"]["token"]
sa = token()
open(f"{work}/sa.token", "w").write(sa)
open(f"{work}/fresh.tokens", "w").write("\n".join(token() for _ in range(fresh)))
# The binding reaches the authorizer through its informer: wait until the GET is allowed.
deadline = time.time() + 30
while True:
    try:
        call("GET", "/api/v1/namespaces/bench/configmaps/cm", token=sa)
        break
    except urllib.error.HTTPError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
    "user": "system:serviceaccount:bench:bench",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:bench", "system:authenticated"],
    "resourceAttributes": {"namespace": "bench", "verb": "get", "resource": "configmaps", "name": "cm"}}}
open(f"{work}/sar.json", "w").write(json.dumps(sar))
PY
sa_token=$(cat "$work/sa.token")
get="$base/api/v1/namespaces/bench/configmaps/cm"

hey -n 2000 -c 10 -H "Authorization: Bearer $sa_token" "$get" >/dev/null
hey -n 2000 -c 10 -H "Authorization: Bearer admin-token" "$get" >/dev/null

sa_run=$(measure_hey "$pid" -z "$DURATION" -c "$CONCURRENCY" -H "Authorization: Bearer $sa_token" "$get")
admin_run=$(measure_hey "$pid" -z "$DURATION" -c "$CONCURRENCY" -H "Authorization: Bearer admin-token" "$get")
sar_run=$(measure_hey "$pid" -z "$DURATION" -c "$CONCURRENCY" -m POST -T application/json \
    -D "$work/sar.json" -H "Authorization: Bearer admin-token" \
    "$base/apis/authorization.k8s.io/v1/subjectaccessreviews")

# Fresh tokens: one sequential GET per token (each misses the cache), then as many with the
# admin token; the server's CPU per request of each.
fresh=$(python3 - "$base" "$pid" "$work/fresh.tokens" <<'PY'
import http.client, os, ssl, sys
base, pid, path = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = base[len("https://"):].rsplit(":", 1)
tokens = [t for t in open(path).read().split("\n") if t]
hz = os.sysconf("SC_CLK_TCK")
def ticks():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
def run(token_list):
    conn = http.client.HTTPSConnection(host, int(port), context=ssl._create_unverified_context())
    before = ticks()
    for t in token_list:
        conn.request("GET", "/api/v1/namespaces/bench/configmaps/cm", headers={"Authorization": "Bearer " + t})
        r = conn.getresponse()
        r.read()
        assert r.status == 200, r.status
    return (ticks() - before) * 1e6 / hz / len(token_list)
fresh = run(tokens)
cached = run(["admin-token"] * len(tokens))
print(f"{fresh:.0f} {cached:.0f}")
PY
)

echo "### Identity and access (release build, $(nproc) cores, --authorization-mode=Node,RBAC, $ROLES Roles + $ROLES RoleBindings, $CONCURRENCY connections, $DURATION, HTTP/1.1)"
echo
echo "| load | requests/s | p50 ms | p99 ms | non-2xx | server CPU µs/request |"
echo "|---|---|---|---|---|---|"
read -r rps p50 p99 bad cpu <<<"$admin_run"
echo "| GET configmap as system:masters (token file) | $rps | $p50 | $p99 | $bad | $cpu |"
read -r rps p50 p99 bad cpu <<<"$sa_run"
echo "| GET configmap as a service account (RBAC RoleBinding) | $rps | $p50 | $p99 | $bad | $cpu |"
read -r rps p50 p99 bad cpu <<<"$sar_run"
echo "| POST SubjectAccessReview (as system:masters) | $rps | $p50 | $p99 | $bad | $cpu |"
echo
read -r fresh_cpu cached_cpu <<<"$fresh"
echo "Token validation: a GET with a service-account token the server has not seen costs"
echo "$fresh_cpu µs of server CPU, against $cached_cpu µs with a cached token ($FRESH_TOKENS sequential requests each)."
