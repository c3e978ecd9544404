#!/usr/bin/env bash
# The mmtests round trip: exports `reproduce seed-002-tlb-gen --quick` as an mmtests work/log tree
# (`tlblab export --format mmtests`) and runs the command the export prints, mmtests' own
# unmodified compare-kernels.sh, on it; fails on a nonzero exit, on any line on standard error,
# or when the table lacks a run or a thread count. Prints compare-kernels.sh's output.
#     MMTESTS=/path/to/mmtests bash scripts/check_mmtests.sh
# MMTESTS is an mmtests tree (a clone of gormanm/mmtests; the export follows 638401e0). No
# package registry serves mmtests, so without MMTESTS this says so and exits 0 (scripts/test.sh
# runs it only when MMTESTS is set). compare-kernels.sh needs Perl's File::Which, YAML::PP and
# File::Slurp and R (its significance test); as root on Debian they are installed with apt-get
# (libfile-which-perl libyaml-pp-perl libfile-slurp-perl r-base-core), else their absence fails.
# TLBLAB_BIN: the CLI (default target/release/tlblab).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf 'check_mmtests: %s\n' "$*" >&2; }

if [ -z "${MMTESTS:-}" ]; then
    log "MMTESTS is not set (an mmtests tree, e.g. a clone of gormanm/mmtests): skipped"
    exit 0
fi
MMTESTS="$(cd "$MMTESTS" && pwd)"
export MMTESTS
[ -x "$MMTESTS/compare-kernels.sh" ] || { log "$MMTESTS/compare-kernels.sh not found: MMTESTS is not an mmtests tree"; exit 1; }
BIN="${TLBLAB_BIN:-$ROOT/target/release/tlblab}"
[ -x "$BIN" ] || { log "$BIN not found: build it with cargo build --release -p tlblab, or set TLBLAB_BIN"; exit 1; }

missing=()
for m in File::Which:libfile-which-perl YAML::PP:libyaml-pp-perl File::Slurp:libfile-slurp-perl; do
    perl -M"${m%:*}" -e 1 2>/dev/null || missing+=("${m##*:}")
done
command -v R >/dev/null || missing+=(r-base-core)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing ${missing[*]} (what compare-kernels.sh needs)"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        log "compare-kernels.sh needs ${missing[*]} (Debian package names); install them"
        exit 1
    fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
TLBLAB_NO_PROGRESS=1 "$BIN" reproduce seed-002-tlb-gen --quick --out "$work/results" >/dev/null
"$BIN" export --format mmtests "$work/results/seed-002-tlb-gen" "$work/log" >"$work/hint"
# The export's hint, line 2: the exact command (cd into the tree, then compare-kernels.sh).
cmd="$(sed -n 2p "$work/hint")"
case "$cmd" in
    *compare-kernels.sh*) ;;
    *) log "the export's hint is not a compare-kernels.sh command: $(cat "$work/hint")"; exit 1 ;;
esac
# HOME: compare-kernels.sh keeps a temporary file there, install-depends its records.
status=0
(export HOME="$work"; bash -c "$cmd") >"$work/out" 2>"$work/err" </dev/null || status=$?
cat "$work/out"
if [ "$status" != 0 ] || [ -s "$work/err" ]; then
    log "compare-kernels.sh exited $status with $(wc -l <"$work/err") lines on standard error:"
    cat "$work/err" >&2
    exit 1
fi
# Every run in the header, a Hmean row per thread count of the quick run, the duration section.
runs="$(sed -n 1p "$work/hint" | sed -e 's/^wrote mmtests runs //' -e 's/ (benchmark.*//')"
for r in $runs; do
    grep -q -- "${r#tlblab-}" "$work/out" || { log "run $r is not in the table"; exit 1; }
done
rows="$(grep -c '^Hmean ' "$work/out" || true)"
want="$(ls "$work/log/$(echo "$runs" | cut -d' ' -f1)/iter-0/wis-tlbflush/logs" | grep -c '^benchlog-')"
[ "$rows" = "$want" ] || { log "$rows Hmean rows; expected $want (one per thread count)"; exit 1; }
grep -q '^Duration Elapsed' "$work/out" || { log "no Duration section"; exit 1; }
if grep -qiw 'nan' "$work/out"; then log "NaN in the table"; exit 1; fi
log "compare-kernels.sh read the export of seed-002-tlb-gen (quick): exit 0, nothing on standard error"
