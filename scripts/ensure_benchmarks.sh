#!/usr/bin/env bash
# Installs the distributions' benchmarks `tlblab validate` runs beside the simulation when they
# are missing: rt-tests (hackbench), sockperf, fsmark (fs_mark). Debian's packages, with apt-get,
# as root; elsewhere it says what to install and carries on (validate then skips them, saying so).
set -euo pipefail
missing=()
for pair in hackbench:rt-tests sockperf:sockperf fs_mark:fsmark; do
    prog="${pair%%:*}" pkg="${pair#*:}"
    command -v "$prog" >/dev/null 2>&1 || [ -x "/usr/bin/$prog" ] || [ -x "/usr/sbin/$prog" ] || missing+=("$pkg")
done
[ "${#missing[@]}" = 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_benchmarks: installing ${missing[*]} (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "ensure_benchmarks: not installed: ${missing[*]} (as root: apt-get install ${missing[*]}); validate will skip them" >&2
fi
