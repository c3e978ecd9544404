#!/usr/bin/env bash
# The speed yardstick: CPU seconds per simulated second of will-it-scale tlb_flush1_threads with
# 56 tasks on the Skylake-SP profile (kernel 5.18.1).
#     bash scripts/speed.sh [tlblab binary ...]      (default: target/release/tlblab)
# Each binary is timed on a 21 ms and a 1 ms run (1 ms warm-up each); the difference x 50 is the
# cost of one simulated second without start-up. Binaries are interleaved round by round and the
# minimum of ROUNDS (default 5) is kept: the machines are shared and noisy.
#     bash scripts/speed.sh --scaling [binary] [--rounds N] [--duration 20ms]
# prints the scaling table instead (8..224 tasks, per remote flush request, peak memory, the
# fitted growth law): scripts/speed_scaling.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = --scaling ]; then
    shift
    exec python3 "$ROOT/scripts/speed_scaling.py" "$@"
fi
ROUNDS="${ROUNDS:-5}"
[ $# -gt 0 ] || set -- "$ROOT/target/release/tlblab"
cpu_seconds() { # binary duration -> user+sys seconds
    local TIMEFORMAT='%U %S' t
    t=$({ time "$1" run --machine skylake-sp-2s --workload tlb_flush1_threads --threads 56 \
        --warmup 1ms --duration "$2" >/dev/null; } 2>&1)
    awk '{ print $1 + $2 }' <<<"$t"
}
declare -A long short
for b in "$@"; do long[$b]=1e9; short[$b]=1e9; done
for _ in $(seq "$ROUNDS"); do
    for b in "$@"; do
        long[$b]=$(awk -v a="${long[$b]}" -v b="$(cpu_seconds "$b" 21ms)" 'BEGIN { print (b < a) ? b : a }')
        short[$b]=$(awk -v a="${short[$b]}" -v b="$(cpu_seconds "$b" 1ms)" 'BEGIN { print (b < a) ? b : a }')
    done
done
for b in "$@"; do
    awk -v l="${long[$b]}" -v s="${short[$b]}" -v b="$b" \
        'BEGIN { r = (l - s) * 50; printf "%s: %.1f CPU-s per simulated second (simulated/wall %.3f)\n", b, r, 1 / r }'
done
