#!/usr/bin/env bash
# Builds tlblab, writes a quick reproduction and a comparison with their HTML reports into a
# temporary directory, and checks both pages in headless Chromium (scripts/check_html.sh).
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
cargo build --release -q -p tlblab
bin="$ROOT/target/release/tlblab"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" reproduce seed-002-tlb-gen --quick --out "$out/a" >/dev/null
"$bin" reproduce seed-002-tlb-gen --quick --jobs 1 --out "$out/b" >/dev/null
"$bin" compare "$out/a/seed-002-tlb-gen" "$out/b/seed-002-tlb-gen" --out "$out/cmp" >/dev/null
bash "$ROOT/scripts/check_html.sh" "$out/a/seed-002-tlb-gen/index.html" "$out/cmp/index.html"
