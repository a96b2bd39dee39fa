#!/usr/bin/env bash
# Benchmarks the Kubernetes API of kube-apiserver (issue 4) with the embedded backend, over TLS
# on loopback with a bearer token:
#  * GET of one configmap, and /healthz on the same server in the same run (the ratio);
#  * LIST of LIST_SIZES configmaps (default 1k and 10k) as JSON and as Table, from the watch
#    cache (resourceVersion=0) and, for JSON, the default consistent list;
#  * CREATE (POST with generateName, hey) and UPDATE (PUT with new data each time, the
#    api_bench example) of configmaps;
#  * watch fan-out through the HTTP endpoint: WATCHERS watches of one namespace, WATCH_WRITES
#    creates, delivery rate and latency (api_bench);
#  * RSS of a fresh server holding RSS_COUNT small configmaps, against their serialized size.
# Prints a markdown report on stdout, with the issue's goals: GET >= 50% of /healthz,
# LIST of 10k from the watch cache p99 < 300 ms, RSS with 100k configmaps < 3x serialized.
#
# Needs `hey` (https://github.com/rakyll/hey; hey sends its Host header, port included, as
# TLS SNI; the server ignores such a name, and every run passes `-host localhost`) and python3.
# Tunables: CONCURRENCY (50), LIST_CONCURRENCY (10), DURATION (10s), ROUNDS (2, best counts),
# LIST_SIZES ("1000 10000"), UPDATES (20000), WATCHERS (1000), WATCH_WRITES (1000),
# RSS_COUNT (100000), VALUE_BYTES (64: the data of each "small" configmap).
# A quick check of the script itself: LIST_SIZES="100 1000" DURATION=2s ROUNDS=1 UPDATES=500
# WATCHERS=20 WATCH_WRITES=50 RSS_COUNT=2000 scripts/bench-api.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-50}
LIST_CONCURRENCY=${LIST_CONCURRENCY:-10}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-2}
LIST_SIZES=${LIST_SIZES:-"1000 10000"}
UPDATES=${UPDATES:-20000}
WATCHERS=${WATCHERS:-1000}
WATCH_WRITES=${WATCH_WRITES:-1000}
RSS_COUNT=${RSS_COUNT:-100000}
VALUE_BYTES=${VALUE_BYTES:-64}

command -v hey >/dev/null || { echo "bench-api.sh: hey not found in PATH" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-api.sh: python3 not found in PATH" >&2; exit 1; }

cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
cargo build --release --quiet -p kube-apiserver --example api_bench
bin="$root/target/release/kube-apiserver"
api_bench="$root/target/release/examples/api_bench"

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

echo 'bench-token,bench,1000,"system:masters"' >"$work/tokens.csv"
TOKEN=bench-token

# Starts a server on data dir $1; sets $port and $server_pid.
start_server() {
    local dir=$1
    "$bin" --data-dir="$dir" --secure-port=0 --bind-address=127.0.0.1 \
        --token-auth-file="$work/tokens.csv" >"$dir.out" 2>"$dir.err" &
    server_pid=$!
    pids+=("$server_pid")
    port=$(wait_line "$dir.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')
    # Ready once /readyz answers 200 (post-start hooks done).
    for _ in $(seq 1000); do
        if [[ $(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
            "https://127.0.0.1:$port/readyz") == 200 ]]; then
            return 0
        fi
        sleep 0.01
    done
    echo "bench-api.sh: server on $dir never became ready" >&2
    return 1
}

rss_mib() {
    awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"
}

# api_bench against the current server: api_bench <mode> <namespace> <n> <m> [bytes].
bench() {
    "$api_bench" "127.0.0.1:$port" "$data/pki/ca.crt" "$TOKEN" "$@"
}

# hey against the current server: load <concurrency> <path> [hey flags…]; prints
# "rps p50_ms p99_ms bad" (bad: non-2xx responses plus transport errors).
load() {
    local concurrency=$1 path=$2
    shift 2
    local out
    out=$(hey -z "$DURATION" -c "$concurrency" -h2 -disable-compression -host localhost \
        -H "Authorization: Bearer $TOKEN" "$@" "https://127.0.0.1:$port$path")
    local rps p50 p99 bad
    rps=$(awk '/Requests\/sec:/ {printf "%.0f", $2}' <<<"$out")
    p50=$(awk '/ 50% in / {printf "%.2f", $3 * 1000}' <<<"$out")
    p99=$(awk '/ 99% in / {printf "%.2f", $3 * 1000}' <<<"$out")
    bad=$(awk '/Error distribution/ {err = 1}
        err && /^[ \t]*\[[0-9]+\]/ {gsub(/[][]/, "", $1); n += $1}
        !err && /\[[0-9]+\][ \t]+[0-9]+ responses/ && $1 !~ /^\[2/ {n += $2}
        END {print n + 0}' <<<"$out")
    echo "$rps $p50 $p99 $bad"
}

# The best of ROUNDS runs (by req/s) of `load "$@"`.
best_of() {
    local best="0 0 0 0" run
    for _ in $(seq "$ROUNDS"); do
        run=$(load "$@")
        if awk -v a="${run%% *}" -v b="${best%% *}" 'BEGIN {exit !(a > b)}'; then
            best=$run
        fi
    done
    echo "$best"
}

row() { # row <what> <"rps p50 p99 bad">
    local rps p50 p99 bad
    read -r rps p50 p99 bad <<<"$2"
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$rps" "$p50" "$p99" "$bad"
}

# --- one server for the request benchmarks ------------------------------------------------------
data="$work/data"
start_server "$data"
rows=()

# GET of one configmap against /healthz, alternating, in the same run.
bench populate bench-get 1 1 "$VALUE_BYTES" >/dev/null
get_path=/api/v1/namespaces/bench-get/configmaps/cm-0
hey -n 2000 -c 10 -h2 -host localhost -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$get_path" >/dev/null
healthz=$(best_of "$CONCURRENCY" /healthz)
get=$(best_of "$CONCURRENCY" "$get_path")
rows+=("$(row "GET /healthz" "$healthz")")
rows+=("$(row "GET one configmap" "$get")")
get_ratio=$(awk -v g="${get%% *}" -v h="${healthz%% *}" 'BEGIN {printf "%.0f", 100 * g / h}')

# LIST of N configmaps.
table_accept="Accept: application/json;as=Table;v=v1;g=meta.k8s.io"
declare -A list_p99
for n in $LIST_SIZES; do
    ns="bench-list-$n"
    populated=$(bench populate "$ns" "$n" "$CONCURRENCY" "$VALUE_BYTES")
    path="/api/v1/namespaces/$ns/configmaps"
    hey -n 20 -c 2 -h2 -host localhost -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$port$path?resourceVersion=0" >/dev/null
    cached=$(best_of "$LIST_CONCURRENCY" "$path?resourceVersion=0")
    consistent=$(best_of "$LIST_CONCURRENCY" "$path")
    table=$(best_of "$LIST_CONCURRENCY" "$path?resourceVersion=0" -H "$table_accept")
    rows+=("$(row "LIST $n JSON, watch cache (rv=0)" "$cached")")
    rows+=("$(row "LIST $n JSON, consistent (no rv)" "$consistent")")
    rows+=("$(row "LIST $n Table, watch cache (rv=0)" "$table")")
    list_p99[$n]=$(awk '{print $3}' <<<"$cached")
    read -r _ secs rate _ <<<"$populated"
    rows+=("| (populating $n: $secs s, $rate creates/s through api_bench) | | | | |")
done

# CREATE: POST with generateName, so that every request creates a new object.
printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"c-"},"data":{"value":"%s"}}' \
    "$(head -c "$VALUE_BYTES" /dev/zero | tr '\0' x)" >"$work/create.json"
bench populate bench-create 0 1 >/dev/null
create=$(best_of "$CONCURRENCY" /api/v1/namespaces/bench-create/configmaps -m POST \
    -T application/json -D "$work/create.json")
rows+=("$(row "CREATE configmap (generateName)" "$create")")

# UPDATE: PUT with new data every time, one object per worker.
read -r urps up50 up99 ubad <<<"$(bench update bench-update "$UPDATES" "$CONCURRENCY")"
rows+=("$(row "UPDATE configmap ($UPDATES PUTs, $CONCURRENCY workers)" "$urps $up50 $up99 $ubad")")

# Watch fan-out.
read -r delivered expected wsecs wrate wp50 wp99 <<<"$(bench watch bench-watch "$WATCHERS" "$WATCH_WRITES")"
idle_rss_loaded=$(rss_mib "$server_pid")

# --- a fresh server holding RSS_COUNT configmaps ----------------------------------------------------
kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
data="$work/rss"
start_server "$data"
rss_before=$(rss_mib "$server_pid")
read -r _ rss_secs rss_rate rss_errors <<<"$(bench populate bench-rss "$RSS_COUNT" "$CONCURRENCY" "$VALUE_BYTES")"
sleep 1
rss_after=$(rss_mib "$server_pid")
# Serialized size: the compact JSON of every stored object, as a LIST returns it.
serialized=$(curl -sk -H "Authorization: Bearer $TOKEN" \
    "https://127.0.0.1:$port/api/v1/namespaces/bench-rss/configmaps" | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print(len(items), sum(len(json.dumps(i, separators=(",", ":"))) for i in items))')
read -r stored serialized_bytes <<<"$serialized"
rss_after_list=$(rss_mib "$server_pid")

# --- report ------------------------------------------------------------------------------------------
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo "kube-apiserver API benchmark ($(date -u +%Y-%m-%d), $(nproc) CPUs: $cpu; embedded backend; hey -h2 -c $CONCURRENCY (LIST: -c $LIST_CONCURRENCY) -z $DURATION, best of $ROUNDS; TLS on loopback, bearer token; configmaps with $VALUE_BYTES bytes of data)"
echo
echo "| request | req/s | p50 (ms) | p99 (ms) | non-2xx |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "| watch fan-out | watchers | writes | events delivered / expected | delivery rate (events/s) | latency p50 (ms) | latency p99 (ms) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
printf '| /api/v1/namespaces/x/configmaps?watch=1 | %s | %s | %s / %s in %s s | %s | %s | %s |\n' \
    "$WATCHERS" "$WATCH_WRITES" "$delivered" "$expected" "$wsecs" "$wrate" "$wp50" "$wp99"
echo
echo "| configmaps stored | serialized size | RSS before | RSS after creating | RSS after a full LIST | RSS / serialized | (RSS - before) / serialized |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
awk -v n="$stored" -v s="$serialized_bytes" -v b="$rss_before" -v a="$rss_after" -v l="$rss_after_list" 'BEGIN {
    mib = s / 1048576
    printf "| %d | %.1f MiB | %s MiB | %s MiB | %s MiB | %.2fx | %.2fx |\n", n, mib, b, a, l, a / mib, (a - b) / mib
}'
echo "(populating $RSS_COUNT: $rss_secs s, $rss_rate creates/s, $rss_errors errors; RSS of the request-benchmark server at the end: $idle_rss_loaded MiB)"
echo
echo "Goals:"
echo "- GET one configmap at $get_ratio% of the /healthz rate (goal >= 50%)"
largest=$(tr ' ' '\n' <<<"$LIST_SIZES" | sort -n | tail -1)
echo "- LIST $largest from the watch cache: p99 ${list_p99[$largest]} ms (goal for 10000: < 300 ms)"
awk -v s="$serialized_bytes" -v a="$rss_after" -v n="$stored" 'BEGIN {
    printf "- RSS with %d configmaps at %.2fx their serialized size (goal for 100000: < 3x)\n", n, a / (s / 1048576)
}'
