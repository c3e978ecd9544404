#!/usr/bin/env bash
# Installs the tlblab Python package (crates/tlblab-py, PyO3 + maturin) into <repo>/.venv, with
# its dependencies (pandas, tqdm) and what its tests and examples use (pyproject.toml's `test`
# extra: pytest, dask.distributed, matplotlib), all from PyPI;
# then prints the path of the venv's python on stdout (progress goes to stderr).
#     PY="$(bash scripts/ensure_python_api.sh)"; "$PY" -c 'import tlblab; print(tlblab.list())'
# Rebuilds the extension every time (maturin develop --profile P, P = $TLBLAB_CARGO_PROFILE or
# release: scripts/test.sh passes its `suite` profile; seconds when nothing changed).
# Needs what scripts/ensure_venv.sh needs, plus the Rust toolchain (pyo3 0.30: Rust >= 1.85).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$(bash "$ROOT/scripts/ensure_venv.sh")"
log() { printf 'ensure_python_api: %s\n' "$*" >&2; }

if ! "$PY" -c 'import maturin, pandas, tqdm, pytest, distributed, matplotlib' >/dev/null 2>&1; then
    log "installing maturin, pandas, tqdm, pytest, distributed, matplotlib into $ROOT/.venv"
    "$PY" -m pip install --disable-pip-version-check -q \
        "maturin>=1.5,<2" "pandas>=2" "tqdm>=4.60" "pytest>=7" "distributed>=2024.1" "matplotlib>=3.7" >&2
fi
profile="${TLBLAB_CARGO_PROFILE:-release}"
log "building and installing the tlblab package (maturin develop --profile $profile)"
# maturin develop installs into the virtualenv named by VIRTUAL_ENV.
(cd "$ROOT/crates/tlblab-py" && VIRTUAL_ENV="$ROOT/.venv" PATH="$ROOT/.venv/bin:$PATH" \
    "$ROOT/.venv/bin/maturin" develop --profile "$profile" -q >&2)
"$PY" -c 'import tlblab' >&2 || { log "import tlblab failed after install"; exit 1; }
printf '%s\n' "$PY"
