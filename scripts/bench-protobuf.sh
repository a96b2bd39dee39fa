#!/usr/bin/env bash
# Benchmarks protobuf responses (`Accept: application/vnd.kubernetes.protobuf`) against JSON in
# the same run, with the embedded backend over TLS on loopback with a bearer token:
#  * GET of one pod;
#  * LIST of LIST_SIZES pods (default 1k and 10k) from the watch cache (resourceVersion=0).
# For each: requests/s, p50, p99 (hey -h2) and the server's CPU time per request (utime + stime
# from /proc/<pid>/stat before and after the run, divided by the responses received).
# Prints a markdown table on stdout.
#
# Needs `hey` (it sends its Host header, port included, as TLS SNI; the server ignores such a name, and
# every run passes `-host localhost`). Tunables: CONCURRENCY (50), LIST_CONCURRENCY (10),
# DURATION (10s), LIST_SIZES ("1000 10000").
# A quick check of the script itself: LIST_SIZES="100" DURATION=2s scripts/bench-protobuf.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-50}
LIST_CONCURRENCY=${LIST_CONCURRENCY:-10}
DURATION=${DURATION:-10s}
LIST_SIZES=${LIST_SIZES:-"1000 10000"}

command -v hey >/dev/null || { echo "bench-protobuf.sh: hey not found in PATH" >&2; exit 1; }

cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
bin="$root/target/release/kube-apiserver"

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

echo 'bench-token,bench,1000,"system:masters"' >"$work/tokens.csv"
TOKEN=bench-token
PB="application/vnd.kubernetes.protobuf"
ticks=$(getconf CLK_TCK)

data="$work/data"
"$bin" --data-dir="$data" --secure-port=0 --bind-address=127.0.0.1 \
    --token-auth-file="$work/tokens.csv" >"$data.out" 2>"$data.err" &
server_pid=$!
pids+=("$server_pid")
port=$(wait_line "$data.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')
for _ in $(seq 1000); do
    [[ $(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
        "https://127.0.0.1:$port/readyz") == 200 ]] && break
    sleep 0.01
done

# CPU time of the server so far, in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$server_pid/stat"
}

# load <concurrency> <path> <accept>: prints "rps p50_ms p99_ms cpu_ms_per_request bad".
load() {
    local concurrency=$1 path=$2 accept=$3 out before after
    before=$(cpu_ticks)
    out=$(hey -z "$DURATION" -c "$concurrency" -h2 -disable-compression -host localhost \
        -H "Authorization: Bearer $TOKEN" -H "Accept: $accept" "https://127.0.0.1:$port$path")
    after=$(cpu_ticks)
    awk -v before="$before" -v after="$after" -v hz="$ticks" '
        /Requests\/sec:/ {rps = $2}
        / 50% in / {p50 = $3 * 1000}
        / 99% in / {p99 = $3 * 1000}
        /\[[0-9]+\][ \t]+[0-9]+ responses/ {n += $2; if ($1 !~ /^\[2/) bad += $2}
        /Error distribution/ {err = 1}
        err && /^[ \t]*\[[0-9]+\]/ {gsub(/[][]/, "", $1); bad += $1}
        END {printf "%.0f %.2f %.2f %.3f %d\n", rps, p50, p99,
            n ? 1000 * (after - before) / hz / n : 0, bad}' <<<"$out"
}

rows=()
row() { # row <what> <format> <"rps p50 p99 cpu bad">
    local rps p50 p99 cpu bad
    read -r rps p50 p99 cpu bad <<<"$3"
    rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$1" "$2" "$rps" "$p50" "$p99" "$cpu" "$bad")")
}

# Pods with a realistic spec (labels, two containers with ports, env, resources and probes).
pod_json() {
    cat <<'EOF'
{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-","labels":{"app":"bench","tier":"web"},"annotations":{"note":"benchmark pod"}},"spec":{"restartPolicy":"Always","terminationGracePeriodSeconds":30,"nodeName":"node-1","containers":[{"name":"web","image":"nginx:1.27","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"MODE","value":"prod"},{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"500m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/healthz","port":"http"},"periodSeconds":5}},{"name":"sidecar","image":"busybox:1.36","command":["sh","-c","sleep infinity"]}]}}
EOF
}
pod_json >"$work/pod.json"

# populate <namespace> <n>: creates the namespace and n pods.
populate() {
    curl -sk -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}" \
        "https://127.0.0.1:$port/api/v1/namespaces"
    hey -n "$2" -c "$((CONCURRENCY < $2 ? CONCURRENCY : $2))" -h2 -host localhost -m POST -T application/json \
        -D "$work/pod.json" -H "Authorization: Bearer $TOKEN" \
        "https://127.0.0.1:$port/api/v1/namespaces/$1/pods" >/dev/null
}

populate bench-get 1
get_path=/api/v1/namespaces/bench-get/pods/$(curl -sk -A bench -H "Authorization: Bearer $TOKEN" \
    "https://127.0.0.1:$port/api/v1/namespaces/bench-get/pods" |
    grep -oE '"name":"p-[a-z0-9]+"' | head -1 | cut -d'"' -f4)
hey -n 2000 -c 10 -h2 -host localhost -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$get_path" >/dev/null
row "GET one pod" JSON "$(load "$CONCURRENCY" "$get_path" application/json)"
row "GET one pod" protobuf "$(load "$CONCURRENCY" "$get_path" "$PB")"

for n in $LIST_SIZES; do
    populate "bench-list-$n" "$n"
    path="/api/v1/namespaces/bench-list-$n/pods?resourceVersion=0"
    stored=$(curl -sk -A bench -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$path" | grep -o '"kind":"Pod"' | wc -l)
    hey -n 20 -c 2 -h2 -host localhost -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$path" >/dev/null
    hey -n 20 -c 2 -h2 -host localhost -H "Authorization: Bearer $TOKEN" -H "Accept: $PB" "https://127.0.0.1:$port$path" >/dev/null
    json_size=$(curl -sk -A bench -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$path" | wc -c)
    pb_size=$(curl -sk -A bench -H "Authorization: Bearer $TOKEN" -H "Accept: $PB" "https://127.0.0.1:$port$path" | wc -c)
    row "LIST $stored pods (rv=0)" "JSON, $((json_size / 1024)) KiB" "$(load "$LIST_CONCURRENCY" "$path" application/json)"
    row "LIST $stored pods (rv=0)" "protobuf, $((pb_size / 1024)) KiB" "$(load "$LIST_CONCURRENCY" "$path" "$PB")"
done

cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo "protobuf vs JSON ($(date -u +%Y-%m-%d), $(nproc) CPUs: $cpu; embedded backend; hey -h2 -c $CONCURRENCY (LIST: -c $LIST_CONCURRENCY) -z $DURATION; TLS on loopback, bearer token)"
echo
echo "| request | format | req/s | p50 (ms) | p99 (ms) | server CPU per request (ms) | non-2xx |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
