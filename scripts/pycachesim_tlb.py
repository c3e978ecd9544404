#!/usr/bin/env python3
"""Peer TLB simulation with pycachesim, for cross-checking `tlblab trace`.

Usage (same arguments as `tlblab trace`):
    python scripts/pycachesim_tlb.py [--tlb SETSxWAYS]... [--page-size 4k|2m]
        [--policy lru] [--format raw64|lackey|hex] [--json] FILE|-

Needs pycachesim (`pip install pycachesim==0.3.1`; scripts/test.sh installs it
into .venv).  Every `--tlb` level becomes a pycachesim `Cache(name, sets, ways,
page_size, 'LRU')`, chained with load_from/store_to down to `MainMemory`; every
access is a *load* (a TLB has no dirty state), so a miss at every level fills
every level (non-inclusive, like tlblab's explicit levels).  The result is
printed as JSON:

    {"levels": [{"name": "L1", "hits": H, "misses": M}, ...], "accesses": N, ...}

with hits = HIT_count and misses = MISS_count of each level and accesses = the
number of lookups (pages touched) at level 1.

Notes on pycachesim 0.3.1 (read from its backend.c and checked here):
  * `CacheSimulator.load(addr)` with a single int parses addr with the C format
    "I" (32-bit unsigned int) into a `long`: addresses >= 4 GiB are truncated
    (0x100000000 and 0x200000000 hit the same line).  So this script only ever
    passes iterables, which go through `iterload` and `PyLong_AsLong` (64-bit).
  * `iterload(addrs, length=L)` loads [addr, addr+L) and counts one HIT or MISS
    per cache line touched (LOAD_count counts calls, not lines), which is the
    page-splitting lackey needs.  Accesses that stay inside one page are batched
    with length 1; the ones that span a page boundary are passed with their
    real size and pycachesim splits them.
  * Addresses >= 2**63 do not fit its signed `long`; they are rejected.
  * It has no PLRU; `--policy plru` is an error.
"""
import argparse
import gzip
import json
import sys
import time
from array import array

PAGE_SIZES = {"4k": 4096, "2m": 2 * 1024 * 1024}
ADDR_LIMIT = 1 << 63


def die(msg, code=2):
    sys.stderr.write("pycachesim_tlb: error: %s\n" % msg)
    sys.exit(code)


def parse_geometry(text):
    try:
        sets_s, ways_s = text.lower().split("x")
        sets, ways = int(sets_s), int(ways_s)
    except ValueError:
        die("--tlb %r: expected SETSxWAYS, e.g. 16x4" % text)
    if sets < 1 or sets & (sets - 1):
        die("--tlb %r: sets must be a power of two" % text)
    if ways < 1:
        die("--tlb %r: ways must be >= 1" % text)
    return sets, ways


def read_input(path):
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    if path.endswith(".gz") or data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def parse_raw64(data):
    if len(data) % 8:
        die("raw64 input length %d is not a multiple of 8" % len(data))
    # Top byte of every little-endian u64 must be < 0x80 (fast check in C).
    if data[7::8].translate(None, bytes(range(0x80))):
        die("address >= 2**63 in input: pycachesim cannot represent it")
    addrs = array("Q")
    addrs.frombytes(data)
    if sys.byteorder != "little":
        addrs.byteswap()
    return addrs


def parse_hex(data):
    addrs = array("Q")
    app = addrs.append
    for lineno, line in enumerate(data.split(b"\n"), 1):
        s = line.strip()
        if not s or s[:1] == b"#":
            continue
        try:
            app(int(s, 16))
        except (ValueError, OverflowError):
            die("hex line %d: bad address %r" % (lineno, line[:60]))
    if addrs and max(addrs) >= ADDR_LIMIT:
        die("address >= 2**63 in input: pycachesim cannot represent it")
    return addrs


def lineno_of(data, line):
    """Line number of the first occurrence of line (for error messages)."""
    return data.count(b"\n", 0, max(data.find(line), 0)) + 1


def parse_lackey(data, page_size):
    """Return (ops, lookups): ops is a list of (addr_list, length) batches in
    trace order; lookups is the number of pages touched (computed here
    independently of pycachesim, as a self-check)."""
    mask = page_size - 1
    shift = page_size.bit_length() - 1
    fast = {b"I  ", b" L ", b" S ", b" M "}  # lackey's exact column layout
    kinds = (b"I", b"L", b"S", b"M")
    ops = []
    run = []  # consecutive single-page accesses, loaded with length 1
    app = run.append
    lookups = 0
    for line in data.split(b"\n"):
        if line[:3] in fast:
            a, _, sz = line[3:].partition(b",")
        elif line[:2] == b"==" or not line.strip():
            continue
        else:  # tolerate other whitespace, reject anything else
            parts = line.split()
            if len(parts) != 2 or parts[0] not in kinds:
                die("lackey line %d: cannot parse %r" % (lineno_of(data, line), line[:60]))
            a, _, sz = parts[1].partition(b",")
        try:
            addr = int(a, 16)
            size = int(sz)
            if size < 0 or addr < 0:
                raise ValueError
        except ValueError:
            die("lackey line %d: cannot parse %r" % (lineno_of(data, line), line[:60]))
        if (addr & mask) + size <= page_size:
            if size < 1:
                size = 1
            app(addr)
            lookups += 1
            continue
        if addr + size - 1 >= ADDR_LIMIT:
            die("lackey line %d: address >= 2**63" % lineno_of(data, line))
        if run:
            ops.append((run, 1))
            run = []
            app = run.append
        ops.append(([addr], size))
        lookups += ((addr + size - 1) >> shift) - (addr >> shift) + 1
    if run:
        ops.append((run, 1))
    if lookups and max(max(r) for r, _ in ops) >= ADDR_LIMIT:
        die("address >= 2**63 in input: pycachesim cannot represent it")
    return ops, lookups


def build(levels, page_size):
    try:
        from cachesim import Cache, CacheSimulator, MainMemory
    except ImportError:
        die("pycachesim is not installed (pip install pycachesim==0.3.1, "
            "or run scripts/test.sh which sets up .venv)")
    caches = []
    below = None
    for i in range(len(levels), 0, -1):
        sets, ways = levels[i - 1]
        c = Cache("L%d" % i, sets, ways, page_size, "LRU",
                  load_from=below, store_to=below)
        caches.append(c)
        below = c
    caches.reverse()
    mem = MainMemory()
    mem.load_to(caches[-1])
    mem.store_from(caches[-1])
    return CacheSimulator(caches[0], mem), caches


def main(argv=None):
    p = argparse.ArgumentParser(
        description="pycachesim peer of `tlblab trace` (prints JSON counts)")
    p.add_argument("--tlb", action="append", metavar="SETSxWAYS",
                   help="TLB level geometry, repeatable, first = L1 (default 16x4)")
    p.add_argument("--page-size", default="4k", type=str.lower,
                   choices=sorted(PAGE_SIZES))
    p.add_argument("--policy", default="lru", type=str.lower)
    p.add_argument("--format", default="raw64", type=str.lower,
                   choices=["raw64", "lackey", "hex"])
    p.add_argument("--json", action="store_true",
                   help="accepted for symmetry with tlblab; output is always JSON")
    p.add_argument("--timing", action="store_true",
                   help="add parse_seconds and simulate_seconds to the JSON")
    p.add_argument("file", metavar="FILE|-")
    a = p.parse_args(argv)

    if a.policy != "lru":
        die("--policy %s: pycachesim only models LRU (no PLRU), "
            "cannot cross-check this policy" % a.policy)
    levels = [parse_geometry(t) for t in (a.tlb or ["16x4"])]
    page_size = PAGE_SIZES[a.page_size]
    cs, caches = build(levels, page_size)

    t0 = time.perf_counter()
    try:
        data = read_input(a.file)
    except OSError as e:
        die("cannot read %s: %s" % (a.file, e))

    if a.format == "lackey":
        ops, expected = parse_lackey(data, page_size)
        del data
        t1 = time.perf_counter()
        load = caches[0].backend.iterload
        for addrs, length in ops:
            load(addrs, length)
    else:
        addrs = parse_raw64(data) if a.format == "raw64" else parse_hex(data)
        del data
        t1 = time.perf_counter()
        expected = len(addrs)
        # one C-level loop over the whole trace (iterload, length 1)
        caches[0].backend.iterload(addrs)

    t2 = time.perf_counter()
    l1 = caches[0]
    accesses = l1.HIT_count + l1.MISS_count
    if accesses != expected:
        die("internal: pycachesim counted %d lookups, expected %d pages touched"
            % (accesses, expected), code=3)
    out = {
        "levels": [{"name": c.name, "hits": c.HIT_count, "misses": c.MISS_count}
                   for c in caches],
        "accesses": accesses,
        "simulator": "pycachesim",
        "page_size": page_size,
        "tlb": ["%dx%d" % g for g in levels],
        "policy": "lru",
    }
    if a.timing:
        out["parse_seconds"] = round(t1 - t0, 6)
        out["simulate_seconds"] = round(t2 - t1, 6)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
