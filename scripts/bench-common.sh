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
