#!/usr/bin/env bash
# The project's test command:  bash scripts/test.sh [extra cargo test args...]
#
# Works from any directory.  Sets up <repo>/.venv with pycachesim (the peer
# simulator the cross-check test compares tlblab against; see
# scripts/ensure_venv.sh), exports TLBLAB_PYTHON=<repo>/.venv/bin/python and runs
#     cargo test --workspace --release "$@"
# (release mode so the cross-check over large traces is fast).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TLBLAB_PYTHON="$(bash "$ROOT/scripts/ensure_venv.sh")"
export TLBLAB_PYTHON
cd "$ROOT"
printf 'test.sh: TLBLAB_PYTHON=%s; cargo test --workspace --release %s\n' "$TLBLAB_PYTHON" "$*" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --release "$@" 2>&1 | tee "$log" || status=$?
# The HTML reports as a reader sees them: headless Chromium renders what `reproduce --out` and
# `compare --out` write (scripts/check_html.sh installs chromium on CI).
if [ "$status" = 0 ]; then
    bash "$ROOT/scripts/check_report.sh" || status=$?
fi
# One closing line for the whole suite (cargo prints one "test result" per test binary, the
# last of which is often an empty doc-test run).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
