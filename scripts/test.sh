#!/usr/bin/env bash
# The project's test command:  bash scripts/test.sh [extra cargo test args...]
#
# Works from any directory.  Sets up <repo>/.venv with pycachesim (the peer
# simulator the cross-check test compares tlblab against; see
# scripts/ensure_venv.sh), exports TLBLAB_PYTHON=<repo>/.venv/bin/python and runs
#     cargo test --workspace --profile suite --no-fail-fast "$@"
# (Cargo.toml's `suite` profile: release optimisation, so the cross-check over large traces is
# fast, without the thin LTO that doubles a clean build), then installs the Python package
# (scripts/ensure_python_api.sh, same profile) and runs its pytest suite.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TLBLAB_PYTHON="$(bash "$ROOT/scripts/ensure_venv.sh")"
# The real benchmarks `validate` runs beside the model (rt-tests' hackbench, sockperf, fs_mark).
bash "$ROOT/scripts/ensure_benchmarks.sh" || echo "test.sh: could not install the validate benchmarks" >&2
export TLBLAB_PYTHON
# ensure_python_api.sh builds the extension with the same profile, reusing the crates.
export TLBLAB_CARGO_PROFILE=suite
BIN="$ROOT/target/suite/tlblab"
cd "$ROOT"
printf 'test.sh: TLBLAB_PYTHON=%s; cargo test --workspace --profile suite --no-fail-fast %s\n' "$TLBLAB_PYTHON" "$*" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --profile suite --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
# The HTML reports as a reader sees them: headless Chromium renders what `reproduce --out` and
# `compare --out` write (scripts/check_html.sh installs chromium on CI).
if [ "$status" = 0 ]; then
    TLBLAB_BIN="$BIN" bash "$ROOT/scripts/check_report.sh" || status=$?
fi
# The Python API (crates/tlblab-py): install it into .venv, then its pytest suite (which also
# runs examples/ and a Dask LocalCluster). pytest's exit code 5 means "no tests collected".
if [ "$status" = 0 ]; then
    PY="$(bash "$ROOT/scripts/ensure_python_api.sh")" || status=$?
fi
if [ "$status" = 0 ]; then
    pyst=0
    TLBLAB_BIN="$BIN" "$PY" -m pytest -q -p no:cacheprovider \
        "$ROOT/crates/tlblab-py/tests" 2>&1 | tee -a "$log" || pyst=$?
    [ "$pyst" = 0 ] || [ "$pyst" = 5 ] || status=$pyst
fi
# The mmtests round trip (the real compare-kernels.sh reads an export): only where MMTESTS names
# an mmtests tree, which no package registry serves.
if [ "$status" = 0 ] && [ -n "${MMTESTS:-}" ]; then
    bash "$ROOT/scripts/check_mmtests.sh" || status=$?
fi
# One closing line for the whole suite (cargo prints one "test result" per test binary, the
# last of which is often an empty doc-test run; pytest one "N passed, M failed in T s" line).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     / passed| failed/ && / in [0-9.]+s/ && !/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed,?$/) p += $i; if ($(i+1) ~ /^failed,?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
