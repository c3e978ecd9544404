#!/usr/bin/env bash
# Speed comparison: `tlblab trace` vs the pycachesim peer on the same trace.
#
#   bash scripts/bench_trace.sh            # from any directory; takes ~1-2 minutes
#   RUNS=9 N=20000000 bash scripts/bench_trace.sh
#   BUILD=0 bash scripts/bench_trace.sh    # skip cargo build, use the existing binary
#
# What it does:
#   1. builds target/release/tlblab (cargo build --release -p tlblab) and makes
#      sure .venv has pycachesim (scripts/ensure_venv.sh);
#   2. generates, once, a deterministic trace of N (default 10,000,000) raw64
#      addresses into target/bench/ with scripts/gen_trace.py: the "mix" stream
#      with a working set of WS_PAGES (default 192) 4 KiB pages, i.e. 3x the
#      reach of a 16x4 TLB -- 70% uniformly random pages of that working set,
#      20% a sequential 8-byte sweep, 10% a hot set of 8 pages;
#   3. for --tlb 16x4 and for --tlb 16x4 --tlb 128x8 runs, RUNS (default 5)
#      times each after one untimed warm-up run:
#        target/release/tlblab trace <tlbs> --format raw64 --json FILE
#        .venv/bin/python scripts/pycachesim_tlb.py <tlbs> --format raw64 --json FILE
#      checks that both report the same counts, and prints the median wall time,
#      lookups/s and the pycachesim/tlblab time ratio, plus (one extra run with
#      --timing) how pycachesim's time splits into reading and simulating.
# Wall times are whole-process (startup, reading the 80 MB file, simulation,
# output).  With hyperfine installed it is used for the timing instead
# (its median); otherwise a small Python timer does the same.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N="${N:-10000000}"
RUNS="${RUNS:-5}"
WS_PAGES="${WS_PAGES:-192}"
SEED="${SEED:-2024}"

[ -f "$HOME/.cargo/env" ] && source "$HOME/.cargo/env"
if [ "${BUILD:-1}" != 0 ]; then  # BUILD=0: time the target/release/tlblab already there
    echo "bench_trace: building tlblab (release)" >&2
    cargo build --release -q -p tlblab
fi
TLBLAB="$ROOT/target/release/tlblab"
PY="$(bash "$ROOT/scripts/ensure_venv.sh")"

mkdir -p "$ROOT/target/bench"
TRACE="$ROOT/target/bench/mix-n$N-ws$WS_PAGES-s$SEED.raw64"
if [ ! -s "$TRACE" ] || [ "$(stat -c %s "$TRACE")" != "$((N * 8))" ]; then
    echo "bench_trace: generating $TRACE" >&2
    "$PY" scripts/gen_trace.py mix --n "$N" --seed "$SEED" --ws-pages "$WS_PAGES" \
        --format raw64 -o "$TRACE.tmp"
    mv "$TRACE.tmp" "$TRACE"
fi

HYPERFINE="$(command -v hyperfine || true)"

"$PY" - "$TLBLAB" "$PY" "$ROOT/scripts/pycachesim_tlb.py" "$TRACE" "$RUNS" "$HYPERFINE" <<'PYEOF'
import json, os, shlex, statistics, subprocess, sys, tempfile, time

tlblab, py, peer, trace, runs, hyperfine = sys.argv[1:6] + [sys.argv[6]]
runs = int(runs)

def counts(out):
    d = json.loads(out)
    return [(l["name"], l["hits"], l["misses"]) for l in d["levels"]], d["accesses"]

def median_wall(cmd):
    """Median wall time of `runs` runs (after one warm-up) and the command's output."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout  # warm-up
    if hyperfine:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([hyperfine, "--style", "none", "-N", "--warmup", "0", "--runs", str(runs),
                            "--export-json", f.name, shlex.join(cmd)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return json.load(open(f.name))["results"][0]["median"], out
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times), out

n_addrs = os.path.getsize(trace) // 8
print("trace: %s (%d addresses, %.0f MB)" % (trace, n_addrs, os.path.getsize(trace) / 1e6))
print("median of %d runs each (timer: %s)\n" % (runs, "hyperfine" if hyperfine else "python perf_counter"))
print("%-14s %-11s %10s %14s   %s" % ("tlb", "simulator", "median s", "lookups/s", "L1 misses / L2 misses"))
for tlbs in (["16x4"], ["16x4", "128x8"]):
    args = sum((["--tlb", t] for t in tlbs), []) + ["--format", "raw64", "--json", trace]
    t_rust, out_rust = median_wall([tlblab, "trace"] + args)
    t_py, out_py = median_wall([py, peer] + args)
    cr, cp = counts(out_rust), counts(out_py)
    same = "counts agree" if cr == cp else "COUNTS DIFFER: tlblab %s vs pycachesim %s" % (cr, cp)
    lookups = cr[1]
    miss = " / ".join(str(m) for _, _, m in cr[0])
    name = "+".join(tlbs)
    print("%-14s %-11s %10.3f %14s   %s" % (name, "tlblab", t_rust, "{:,.0f}".format(lookups / t_rust), miss))
    print("%-14s %-11s %10.3f %14s" % ("", "pycachesim", t_py, "{:,.0f}".format(lookups / t_py)))
    split = json.loads(subprocess.run([py, peer, "--timing"] + args, check=True,
                                      capture_output=True, text=True).stdout)
    print("%-14s (pycachesim inside: %.3f s reading+decoding, %.3f s simulating = %s lookups/s)"
          % ("", split["parse_seconds"], split["simulate_seconds"],
             "{:,.0f}".format(lookups / split["simulate_seconds"])))
    print("%-14s ratio pycachesim/tlblab = %.2fx; %s\n" % ("", t_py / t_rust, same))
    if cr != cp:
        sys.exit(1)
PYEOF
