#!/usr/bin/env bash
# Makes sure <repo>/.venv exists and has pycachesim (the peer simulator), then
# prints the path of its python on stdout (progress goes to stderr).
#     PY="$(bash scripts/ensure_venv.sh)"
# Used by scripts/test.sh and scripts/bench_trace.sh; works from any directory.
# Needs python3 (with venv/ensurepip), gcc and PyPI the first time: pycachesim
# 0.3.1 is built from its sdist.  As root on Debian it installs python3-venv /
# python3-dev with apt-get if they are missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
PYCACHESIM_VERSION="0.3.1"

log() { printf 'ensure_venv: %s\n' "$*" >&2; }
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

# A .venv whose interpreter is gone or broken is rebuilt from scratch.
if [ -e "$VENV" ] && ! "$PY" -c 'import sys' >/dev/null 2>&1; then
    log "removing broken $VENV"
    rm -rf "$VENV"
fi

if [ ! -x "$PY" ]; then
    command -v python3 >/dev/null || { log "python3 not found"; exit 1; }
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1 && can_apt; then
        log "python3 lacks venv/ensurepip; installing python3-venv"
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
    fi
    log "creating $VENV"
    python3 -m venv "$VENV" >&2
fi

if ! "$PY" -c 'import cachesim' >/dev/null 2>&1; then
    # pycachesim has a C extension: it needs Python.h and a C compiler.
    if ! "$PY" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
        && can_apt; then
        log "Python.h missing; installing python3-dev"
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev >&2
    fi
    log "installing pycachesim==$PYCACHESIM_VERSION into $VENV"
    "$PY" -m pip install --disable-pip-version-check -q "pycachesim==$PYCACHESIM_VERSION" >&2
    "$PY" -c 'import cachesim' >&2 || { log "pycachesim import failed after install"; exit 1; }
fi

printf '%s\n' "$PY"
