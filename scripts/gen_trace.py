#!/usr/bin/env python3
"""Write deterministic synthetic address traces for tlblab.

Usage:
    python3 scripts/gen_trace.py KIND --n N --seed SEED --format raw64|hex|lackey \
        [--page-size 4k|2m] [--ws-pages P] -o OUT

The same arguments always give byte-identical output (only random.Random.random(),
whose sequence Python guarantees across versions, is used).  OUT ending in ".gz"
is gzip-compressed.  With -o - the trace goes to stdout.

KIND (N = number of records written):
  uniform   random pages drawn uniformly from a working set of --ws-pages pages
            (default 256), random 8-byte-aligned offset inside the page
  seq       sequential sweep in 64-byte steps over --ws-pages pages, wrapping
  stride    a stride of (page size * 8 + 64) bytes over --ws-pages * 8 pages,
            so successive accesses collide in a few TLB sets
  hotcold   zipf-ish mix: 80% of accesses go to a hot 1/16 of the working set,
            picked with a 1/(1+u*k) skew, 20% to uniformly random cold pages
  mix       the benchmark mix: 70% uniform random pages over --ws-pages, 20% a
            sequential 8-byte sweep, 10% a hot set of 8 pages
  lackey    (only --format lackey) valgrind-lackey-style I/L/S/M lines with 64-bit
            addresses (many above 4 GiB), sizes 1..32, about a third of them
            placed so that they span a page boundary, plus '==PID==' message
            lines and a few records at page-aligned boundaries

Addresses stay below 2**47 (user-space like) so that every simulator,
including pycachesim (signed C long), can take them.
"""
import argparse
import gzip
import random
import sys
from array import array

PAGE = {"4k": 4096, "2m": 2 * 1024 * 1024}

# Base addresses of the synthetic regions: above 4 GiB on purpose (catches
# simulators that truncate addresses to 32 bits), below 2**47.
HEAP = 0x5555_0000_0000
STACK = 0x7FFE_0000_0000
CODE = 0x0040_0000


def gen_uniform(n, r, ps, ws):
    rnd = r.random
    return [HEAP + int(rnd() * ws) * ps + (int(rnd() * ps) & ~7) for _ in range(n)]


def gen_seq(n, r, ps, ws):
    span = ws * ps
    start = int(r.random() * 64) * 64
    return [HEAP + (start + 64 * i) % span for i in range(n)]


def gen_stride(n, r, ps, ws):
    stride = ps * 8 + 64
    span = ws * 8 * ps
    start = int(r.random() * ps) & ~7
    return [HEAP + (start + stride * i) % span for i in range(n)]


def gen_hotcold(n, r, ps, ws):
    rnd = r.random
    hot = max(1, ws // 16)
    out = []
    app = out.append
    for _ in range(n):
        if rnd() < 0.8:
            # skewed towards low page numbers: zipf-like
            page = int(hot / (1.0 + rnd() * (hot - 1))) - 1 if hot > 1 else 0
            page = min(max(page, 0), hot - 1)
        else:
            page = hot + int(rnd() * ws * 4)
        app(HEAP + page * ps + (int(rnd() * ps) & ~7))
    return out


def gen_mix(n, r, ps, ws):
    rnd = r.random
    out = []
    app = out.append
    seq_pos = 0
    seq_span = ws * 2 * ps
    hot_base = STACK
    for _ in range(n):
        u = rnd()
        if u < 0.7:
            app(HEAP + int(rnd() * ws) * ps + (int(rnd() * ps) & ~7))
        elif u < 0.9:
            app(HEAP + ws * ps + seq_pos)
            seq_pos = (seq_pos + 8) % seq_span
        else:
            app(hot_base + int(rnd() * 8) * ps + (int(rnd() * ps) & ~7))
    return out


def gen_lackey_lines(n, r, ps, ws):
    """Return lackey-format text lines (without newline)."""
    rnd = r.random
    lines = ["==4242== Lackey, an example Valgrind tool",
             "==4242== Command: synthetic gen_trace.py lackey",
             "==4242== "]
    pc = CODE + 0x1000 - 24  # code starting right before a page boundary
    for i in range(n):
        u = rnd()
        if u < 0.45:
            size = 1 + int(rnd() * 15)
            lines.append("I  %08x,%d" % (pc, size))
            pc += size
            if rnd() < 0.05:  # jump somewhere else in a code region of ws pages
                pc = CODE + int(rnd() * ws) * ps + int(rnd() * ps)
            continue
        kind = "L" if u < 0.75 else ("S" if u < 0.93 else "M")
        size = (1, 2, 4, 8, 8, 8, 16, 32)[int(rnd() * 8)]
        region = STACK if rnd() < 0.5 else HEAP
        page = int(rnd() * ws)
        v = rnd()
        if v < 0.35:
            # straddle the boundary between page and page+1
            off = ps - 1 - int(rnd() * (size - 1)) if size > 1 else ps - 1
        elif v < 0.40:
            off = ps - size  # ends exactly at the boundary: no crossing
        elif v < 0.45:
            off = 0  # starts exactly at a boundary
        else:
            off = int(rnd() * (ps - size + 1))
        addr = region + page * ps + off
        lines.append(" %s %08x,%d" % (kind, addr, size))
        if i % 50000 == 49999:
            lines.append("==4242== a valgrind message in the middle")
    lines.append("==4242== ")
    lines.append("==4242== Exit code:       0")
    return lines


GENERATORS = {
    "uniform": gen_uniform,
    "seq": gen_seq,
    "stride": gen_stride,
    "hotcold": gen_hotcold,
    "mix": gen_mix,
}


def encode(kind, addrs_or_lines, fmt):
    if kind == "lackey":
        return ("\n".join(addrs_or_lines) + "\n").encode()
    if fmt == "raw64":
        a = array("Q", addrs_or_lines)
        if sys.byteorder != "little":
            a.byteswap()
        return a.tobytes()
    if fmt == "hex":
        head = "# tlblab synthetic trace: %s\n\n" % kind
        body = []
        for i, x in enumerate(addrs_or_lines):
            # alternate with and without 0x prefix; a comment now and then
            body.append(("0x%x" if i & 1 else "%x") % x)
            if i % 10000 == 9999:
                body.append("# checkpoint %d" % (i + 1))
                body.append("")
        return (head + "\n".join(body) + "\n").encode()
    if fmt == "lackey":
        return ("\n".join(" L %08x,1" % x for x in addrs_or_lines) + "\n").encode()
    raise SystemExit("unknown format " + fmt)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kind", choices=sorted(list(GENERATORS) + ["lackey"]))
    p.add_argument("--n", type=int, required=True, help="number of records")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--format", choices=["raw64", "hex", "lackey"], default="raw64")
    p.add_argument("--page-size", choices=sorted(PAGE), default="4k",
                   help="page size the layout is scaled to (default 4k)")
    p.add_argument("--ws-pages", type=int, default=256,
                   help="working-set size in pages (default 256)")
    p.add_argument("-o", "--out", required=True, help="output file, '-' for stdout")
    a = p.parse_args(argv)
    if a.kind == "lackey" and a.format != "lackey":
        p.error("kind lackey needs --format lackey")
    r = random.Random(a.seed)
    ps = PAGE[a.page_size]
    if a.kind == "lackey":
        data = gen_lackey_lines(a.n, r, ps, a.ws_pages)
    else:
        data = GENERATORS[a.kind](a.n, r, ps, a.ws_pages)
        assert all(0 <= x < 1 << 63 for x in (min(data), max(data)))
    blob = encode(a.kind, data, a.format)
    if a.out.endswith(".gz"):
        blob = gzip.compress(blob, compresslevel=6, mtime=0)
    if a.out == "-":
        sys.stdout.buffer.write(blob)
    else:
        with open(a.out, "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
