#!/usr/bin/env bash
# Coverage-guided fuzzing of tlblab's parsers, on the stable toolchain:
#
#     bash scripts/fuzz.sh TARGET SECONDS [--merge]      one target (or `all`: each for SECONDS)
#     bash scripts/fuzz.sh seed                           (re)seed fuzz/corpus/ from shipped files
#
# TARGET: profile, experiment, kernel, layout, data-layout, raw64, hex, lackey, gzip, duration,
# workload, name (the targets of crates/tlblab/src/fuzz.rs; the last three take a value: a
# duration, a workload text with its parameters, an experiment name; their corpora are written
# by hand, `seed` leaves them as they are). The harness (fuzz/) links libFuzzer (libfuzzer-sys compiles it
# with the C++ compiler); the code under test is instrumented with LLVM's SanitizerCoverage
# passes, which stable rustc runs through -C passes / -C llvm-args (what cargo-fuzz does without
# a sanitizer; no nightly needed), with overflow checks and debug assertions on.
#
# New inputs go to target/fuzz/work/TARGET; the saved corpus fuzz/corpus/TARGET is read, and
# with --merge the inputs that add coverage are merged into it (keep it small: CI replays it in
# `cargo test`, tests/fuzz_corpus.rs). A crash stops the run: the input is written to
# fuzz/artifacts/TARGET/ and the script exits 1. Prints inputs executed per target.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGETS=(profile experiment kernel layout data-layout raw64 hex lackey gzip duration workload name)
usage() {
    echo "usage: bash scripts/fuzz.sh TARGET SECONDS [--merge] | seed; TARGET: ${TARGETS[*]} or all" >&2
    exit 2
}

seed() {
    local c="$ROOT/fuzz/corpus"
    mkdir -p "${TARGETS[@]/#/$c/}"
    cp "$ROOT"/profiles/*.toml "$c/profile/"
    cp "$ROOT"/experiments/*.toml "$c/experiment/"
    cp "$ROOT"/kernels/*.toml "$c/kernel/"
    for f in "$ROOT"/layouts/*.toml; do
        case "$f" in
            *-data.toml) cp "$f" "$c/data-layout/" ;;
            *) cp "$f" "$c/layout/" ;;
        esac
    done
    # Traces: the first records of the shipped lackey trace, and the same addresses as hex and
    # raw64; gzip inputs are a format byte (0 raw64, 1 hex, 2 lackey) and a gzip stream.
    python3 - "$ROOT" "$c" <<'PY'
import gzip, struct, sys
root, c = sys.argv[1], sys.argv[2]
lines = gzip.open(f"{root}/crates/tlblab/tests/data/sort-n-500.lackey.gz", "rt").read().splitlines()[:40]
lackey = "\n".join(lines) + "\n"
addrs = [int(l.split()[1].split(",")[0], 16) for l in lines if l[:2].strip() in ("I", "L", "S", "M")]
hexs = "# addresses\n" + "\n".join(f"0x{a:x}" for a in addrs) + "\n"
raw = b"".join(struct.pack("<Q", a) for a in addrs)
open(f"{c}/lackey/seed", "w").write(lackey)
open(f"{c}/hex/seed", "w").write(hexs)
open(f"{c}/raw64/seed", "wb").write(raw)
for i, body in enumerate([raw, hexs.encode(), lackey.encode()]):
    open(f"{c}/gzip/seed-{i}", "wb").write(bytes([i]) + gzip.compress(body, mtime=0))
PY
    # A dictionary per TOML target: the keys, section names and values of its shipped files,
    # and values hostile to a number (libFuzzer splices them in; byte mutation alone rarely
    # writes a key that exists).
    python3 - "$ROOT/fuzz" <<'PY'
import os, re, sys
fuzz = sys.argv[1]
# Values hostile to a number, a table or a one-line error (a string holding a newline or an
# escape), already in dictionary syntax.
hostile = r"""nan inf -inf -1 0 1e9 1e309 4294967296 -9223372036854775808 9223372036854775807 0.0
\"\" \"\\n\" \"\\u001b\" [] {} true false = [[ ]] \x0a \x0d \x00""".split()
for t in ["profile", "experiment", "kernel", "layout", "data-layout"]:
    words = set()
    for f in os.listdir(f"{fuzz}/corpus/{t}"):
        text = open(f"{fuzz}/corpus/{t}/{f}", errors="replace").read()
        words.update(re.findall(r"^\s*\[*\s*([A-Za-z_][A-Za-z0-9_.-]*)", text, re.M))
        words.update(re.findall(r'"([A-Za-z0-9_.+-]{1,24})"', text))
    os.makedirs(f"{fuzz}/dict", exist_ok=True)
    with open(f"{fuzz}/dict/{t}.dict", "w") as out:
        out.writelines(f'"{w}"\n' for w in sorted(words) + hostile)
PY
    du -sh "$c" "$ROOT/fuzz/dict"
}

[ $# -ge 1 ] || usage
if [ "$1" = seed ]; then
    seed
    exit 0
fi
[ $# -ge 2 ] || usage
target="$1"
seconds="$2"
merge="${3:-}"
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
[ -z "$merge" ] || [ "$merge" = --merge ] || usage
if [ "$target" = all ]; then
    for t in "${TARGETS[@]}"; do
        bash "${BASH_SOURCE[0]}" "$t" "$seconds" $merge
    done
    exit 0
fi
printf '%s\n' "${TARGETS[@]}" | grep -qx -- "$target" || usage

export CARGO_TARGET_DIR="$ROOT/target/fuzz"
triple="$(rustc -vV | sed -n 's/^host: //p')"
# --target: the flags reach only the code under test, not build scripts and proc macros.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing" \
    cargo build --release --manifest-path "$ROOT/fuzz/Cargo.toml" --target "$triple" >&2
bin="$CARGO_TARGET_DIR/$triple/release/tlblab-fuzz"

corpus="$ROOT/fuzz/corpus/$target"
work="$CARGO_TARGET_DIR/work/$target"
artifacts="$ROOT/fuzz/artifacts/$target"
mkdir -p "$corpus" "$work" "$artifacts"
log="$CARGO_TARGET_DIR/work/$target.log"
dict=()
[ -f "$ROOT/fuzz/dict/$target.dict" ] && dict=(-dict="$ROOT/fuzz/dict/$target.dict")
status=0
TLBLAB_FUZZ_TARGET="$target" "$bin" "$work" "$corpus" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    >"$log" 2>&1 || status=$?
execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
crashes="$(find "$artifacts" -type f | wc -l)"
if [ "$merge" = --merge ]; then
    TLBLAB_FUZZ_TARGET="$target" "$bin" -merge=1 -max_len=16384 "$corpus" "$work" >>"$log" 2>&1
fi
echo "fuzz $target: ${execs:-?} inputs in ${seconds}s, corpus $(ls "$corpus" | wc -l) files ($(du -sk "$corpus" | cut -f1) KB), $crashes crash file(s) in fuzz/artifacts/$target (log: $log)"
if [ "$status" != 0 ]; then
    grep -E "panicked at|^==[0-9]+== ERROR|SUMMARY|Test unit written" "$log" | head -5 >&2
    exit 1
fi
