# Shared by the benchmark scripts (sourced, not run): a temporary work directory and the
# processes started into `pids`, both cleaned up on exit, and `wait_line`.

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Waits until file $1 has a line matching $2 (10 s), prints the line.
wait_line() {
    for _ in $(seq 1000); do
        if line=$(grep -m1 -- "$2" "$1" 2>/dev/null); then
            echo "$line"
            return 0
        fi
        sleep 0.01
    done
    echo "$(basename "$0"): no '$2' in $1:" >&2
    cat "$1" >&2
    return 1
}

# CPU time (utime + stime) of process $1 so far, in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# Runs `hey "${@:2}"` against the server of pid $1; prints "rps p50_ms p99_ms non2xx
# cpu_us_per_request" (CPU: the server's utime + stime over the run, per response received).
measure_hey() {
    local pid=$1
    shift
    local out before after
    before=$(cpu_ticks "$pid")
    out=$(hey -disable-compression "$@")
    after=$(cpu_ticks "$pid")
    local rps p50 p99 bad responses cpu
    rps=$(awk '/Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(awk '/ 50% in / {printf "%.2f", $3 * 1000}' <<<"$out")
    p99=$(awk '/ 99% in / {printf "%.2f", $3 * 1000}' <<<"$out")
    # Non-2xx responses plus transport errors (counted as "[N] <error>" lines).
    bad=$(awk '/Error distribution/ {err = 1}
        err && /^[ \t]*\[[0-9]+\]/ {gsub(/[][]/, "", $1); n += $1}
        !err && /\[[0-9]+\][ \t]+[0-9]+ responses/ && $1 !~ /^\[2/ {n += $2}
        END {print n + 0}' <<<"$out")
    responses=$(awk '/\[[0-9]+\][ \t]+[0-9]+ responses/ {n += $2} END {print n + 0}' <<<"$out")
    cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$responses" \
        'BEGIN {if (n > 0) printf "%.1f", t * 1e6 / hz / n; else print "n/a"}')
    echo "$rps $p50 $p99 $bad $cpu"
}
