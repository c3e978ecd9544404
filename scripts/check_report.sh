#!/usr/bin/env bash
# Builds tlblab, writes a quick reproduction, a comparison and a sweep with their HTML reports
# into a temporary directory, and checks the three pages in headless Chromium
# (scripts/check_html.sh).
# Needs the fonts for the PNG plots' text too: installs fonts-dejavu-core on CI (root) if missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if ! dpkg -s fonts-dejavu-core >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "check_report: installing fonts-dejavu-core (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq fonts-dejavu-core >/dev/null
fi
# scripts/test.sh passes the binary its `cargo test --workspace` just built (TLBLAB_BIN): a
# `cargo build -p tlblab` here would unify features differently and compile the crates again.
if [ -n "${TLBLAB_BIN:-}" ] && [ -x "$TLBLAB_BIN" ]; then
    bin="$TLBLAB_BIN"
else
    cargo build --release -q -p tlblab
    bin="$ROOT/target/release/tlblab"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" reproduce seed-002-tlb-gen --quick --out "$out/a" >/dev/null
"$bin" reproduce seed-002-tlb-gen --quick --jobs 1 --out "$out/b" >/dev/null
"$bin" compare "$out/a/seed-002-tlb-gen" "$out/b/seed-002-tlb-gen" --out "$out/cmp" >/dev/null
# A sweep with a numeric and a categorical axis: sweep curves of both kinds.
"$bin" sweep --machine haswell-ep-2s --workload tlb_flush1_threads --threads 1,4 \
    --vary ceiling=1,33 --vary read_tlb_gen=always,never --duration 300us --warmup 50us \
    --iterations 2 --out "$out/sweep" >/dev/null 2>"$out/sweep.log" || { cat "$out/sweep.log" >&2; exit 1; }
bash "$ROOT/scripts/check_html.sh" "$out/a/seed-002-tlb-gen/index.html" "$out/cmp/index.html" \
    "$out/sweep/index.html"
