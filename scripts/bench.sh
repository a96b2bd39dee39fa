#!/usr/bin/env bash
# Benchmarks kube-apiserver on loopback:
#  * throughput and latency of a tiny response (GET /healthz) through the full default
#    handler chain over TLS, HTTP/1.1 and HTTP/2 keep-alive connections, against a bare
#    hyper + rustls server (crates/apiserver/examples/bare_tls_server.rs) under the same load
#    in the same run;
#  * start-to-ready time (spawn until /readyz answers 200, median of $STARTS starts);
#  * idle RSS (VmRSS after ready);
#  * each server's CPU time per request (utime + stime from /proc/<pid>/stat around each run,
#    divided by the responses received): on 2 cores hey bounds requests/s, not the server.
# Prints a markdown report on stdout.
#
# Needs `hey` (https://github.com/rakyll/hey; it skips certificate verification and does
# HTTP/2 with -h2) and python3 (start-to-ready timing). hey sends its Host header, port
# included, as TLS SNI (ignored by the server, as Go's ignores it); the runs pass
# `-host localhost` so both servers see the same plain name.
# Tunables: CONCURRENCY (50), DURATION (10s), ROUNDS (2, best counts), STARTS (5), BENCH_PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CONCURRENCY=${CONCURRENCY:-50}
DURATION=${DURATION:-10s}
STARTS=${STARTS:-5}
ROUNDS=${ROUNDS:-2}
# The path served by both servers: /healthz runs every health check of kube-apiserver;
# /healthz/ping runs one, so it measures the handler chain itself.
BENCH_PATH=${BENCH_PATH:-/healthz}

command -v hey >/dev/null || { echo "bench.sh: hey not found in PATH" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench.sh: python3 not found in PATH" >&2; exit 1; }

cargo build --release --quiet -p kube-apiserver --bin kube-apiserver
cargo build --release --quiet -p apiserver --example bare_tls_server
bin="$root/target/release/kube-apiserver"
bare="$root/target/release/examples/bare_tls_server"

# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"

# --- servers under load ---------------------------------------------------------------------
# The load authenticates with a bearer token: anonymous HTTP/2 requests get a GOAWAY after
# each response (upstream's UnauthenticatedHTTP2DOSMitigation), which would measure TLS
# handshakes instead of the chain. hey cannot present a client certificate.
echo 'bench-token,bench,1000,"system:masters"' >"$work/tokens.csv"
"$bin" --data-dir="$work/data" --secure-port=0 --bind-address=127.0.0.1 \
    --token-auth-file="$work/tokens.csv" >"$work/kube.out" 2>"$work/kube.err" &
pids+=($!)
kube_pid=$!
kube_port=$(wait_line "$work/kube.err" "Serving securely on" | sed -E 's/.*:([0-9]+)\s*$/\1/')

"$bare" "$work/data/pki/apiserver.crt" "$work/data/pki/apiserver.key" >"$work/bare.out" 2>&1 &
pids+=($!)
bare_pid=$!
bare_port=$(wait_line "$work/bare.out" "listening on" | sed -E 's/.*:([0-9]+)\s*$/\1/')

# Warm both (TLS session setup, lazy statics) before measuring.
hey -n 2000 -c 10 -host localhost -H "Authorization: Bearer bench-token" "https://127.0.0.1:$kube_port$BENCH_PATH" >/dev/null
hey -n 2000 -c 10 -host localhost -H "Authorization: Bearer bench-token" "https://127.0.0.1:$bare_port$BENCH_PATH" >/dev/null

# Runs hey against port $1 (server pid $2) with extra flags $3..; prints "rps p50_ms p99_ms
# non2xx cpu_us_per_request".
load() {
    local port=$1 pid=$2
    shift 2
    measure_hey "$pid" -z "$DURATION" -c "$CONCURRENCY" -host localhost \
        -H "Authorization: Bearer bench-token" "$@" "https://127.0.0.1:$port$BENCH_PATH"
}

# ROUNDS rounds, alternating which server goes first; the best round of each counts, so a
# burst of unrelated load on the machine hurts neither side more than the other.
declare -A result
for round in $(seq "$ROUNDS"); do
    for proto in h1 h2; do
        flags=()
        [[ $proto == h2 ]] && flags=(-h2)
        order=(kube bare)
        ((round % 2 == 0)) && order=(bare kube)
        for server in "${order[@]}"; do
            port=$kube_port pid=$kube_pid
            [[ $server == bare ]] && port=$bare_port pid=$bare_pid
            run=$(load "$port" "$pid" "${flags[@]}")
            best=${result[${server}_$proto]:-0}
            if awk -v a="${run%% *}" -v b="${best%% *}" 'BEGIN {exit !(a > b)}'; then
                result[${server}_$proto]=$run
            fi
        done
    done
done
kube_rss_after_load=$(awk '/VmRSS/ {print $2}' "/proc/$kube_pid/status")

# --- start-to-ready and idle RSS --------------------------------------------------------------
# Spawns the binary $STARTS times (fresh data dir: includes generating the PKI; and reusing
# it: a restart), polls /readyz every 2 ms from spawn until 200, reads VmRSS once ready.
readiness=$(python3 - "$bin" "$work" "$STARTS" "$work/tokens.csv" <<'PY'
import os, signal, socket, ssl, statistics, subprocess, sys, time, http.client

binary, work, starts, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

def ready(port):
    try:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=1, context=ctx)
        # Anonymous requests are off under AlwaysAllow: authenticate with the bench token.
        conn.request("GET", "/readyz", headers={"Authorization": "Bearer bench-token"})
        status = conn.getresponse().status
        conn.close()
        return status == 200
    except OSError:
        return False

def one(data_dir):
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [binary, f"--data-dir={data_dir}", f"--secure-port={port}", "--bind-address=127.0.0.1",
         f"--token-auth-file={tokens}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not ready(port):
            if proc.poll() is not None or time.perf_counter() - start > 30:
                raise SystemExit("kube-apiserver did not become ready")
            time.sleep(0.002)
        elapsed = time.perf_counter() - start
        time.sleep(0.5)  # idle: let start-up allocations settle
        rss = rss_kib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return elapsed * 1000, rss

fresh = [one(os.path.join(work, f"fresh-{i}")) for i in range(starts)]
restart = [one(os.path.join(work, "fresh-0")) for _ in range(starts)]
print(f"{statistics.median(t for t, _ in fresh):.1f} {statistics.median(t for t, _ in restart):.1f} "
      f"{statistics.median(r for _, r in restart) / 1024:.1f}")
PY
)
read -r ready_fresh ready_restart idle_rss <<<"$readiness"

# --- report -----------------------------------------------------------------------------------
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo "kube-apiserver benchmark ($(date -u +%Y-%m-%d), $(nproc) CPUs: $cpu; hey -c $CONCURRENCY -z $DURATION, best of $ROUNDS rounds, GET $BENCH_PATH over TLS on loopback, bearer token)"
echo
echo "| protocol | server | req/s | p50 (ms) | p99 (ms) | non-200 | server CPU per request (µs) |"
echo "|---|---|---:|---:|---:|---:|---:|"
for proto in h1 h2; do
    name=$([[ $proto == h1 ]] && echo "HTTP/1.1" || echo "HTTP/2")
    read -r krps kp50 kp99 kbad kcpu <<<"${result[kube_$proto]}"
    read -r brps bp50 bp99 bbad bcpu <<<"${result[bare_$proto]}"
    printf '| %s | kube-apiserver (full chain) | %.0f | %s | %s | %s | %s |\n' "$name" "$krps" "$kp50" "$kp99" "$kbad" "$kcpu"
    printf '| %s | bare hyper + rustls | %.0f | %s | %s | %s | %s |\n' "$name" "$brps" "$bp50" "$bp99" "$bbad" "$bcpu"
    ratio=$(awk -v k="$krps" -v b="$brps" 'BEGIN {printf "%.0f", 100 * k / b}')
    cpu_ratio=$(awk -v k="$kcpu" -v b="$bcpu" 'BEGIN {if (b > 0) printf "%.2fx", k / b; else print "n/a"}')
    printf '| %s | **ratio** | **%s%%** | | | | **%s** |\n' "$name" "$ratio" "$cpu_ratio"
done
echo
echo "| start-to-ready, first start (generates PKI), median of $STARTS | start-to-ready, restart, median of $STARTS | idle RSS after ready | RSS after the load runs |"
echo "|---:|---:|---:|---:|"
printf '| %s ms | %s ms | %s MiB | %.1f MiB |\n' "$ready_fresh" "$ready_restart" "$idle_rss" \
    "$(awk -v k="$kube_rss_after_load" 'BEGIN {print k / 1024}')"
