#!/usr/bin/env python3
"""Is an experiment's window converged? Runs it as written and again with some of its
parameters doubled (or its text changed), and compares every reported mean (the Hmean where the
layout prints one).

    python3 scripts/converge.py EXPERIMENT [--double warmup,duration|iterations|...]
                                [--replace OLD --with NEW]... [--tolerance PCT] [--jobs N]
                                [--tlblab BIN] [--keep DIR]

EXPERIMENT is a name under experiments/ or a path to an experiment file. `--double` lists what
to double (any of warmup, duration, iterations; default: warmup,duration; `--double ''` none).
`--replace OLD --with NEW` also changes the variant's text (each OLD must occur): e.g. a start
state against a long warm-up. The rule: the window is converged when doubling moves
every mean by less than `--tolerance` percent (default 1). Prints one line per cell (kernel, row:
mean as written, variant, change) and the largest change; exit code 0 when every change is within
the tolerance, 1 otherwise, 2 on bad arguments. The runs go to a temporary directory (or `--keep DIR`).
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = {"s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3}


def doubled_duration(text: str) -> str:
    m = re.fullmatch(r"\s*([0-9.]+)\s*(s|ms|us|ns)\s*", text)
    if not m:
        raise ValueError(f"duration `{text}`: expected a number with a unit (s, ms, us, ns)")
    ps = round(float(m.group(1)) * UNITS[m.group(2)]) * 2
    return f"{ps // 1000}ns"


def with_doubled(text: str, keys: list) -> str:
    """The experiment text with each key in `keys` doubled (top-level `key = value` lines, and a
    row's own `warmup`/`duration` in the `[windows]` table)."""
    text = with_row_windows_doubled(text, [k for k in keys if k in ("warmup", "duration")])
    for key in keys:
        pat = re.compile(rf"^({key}\s*=\s*)(.+?)\s*$", re.M)
        m = pat.search(text)
        if not m:
            raise ValueError(f"key `{key}` not found at the top level")
        value = m.group(2)
        if key == "iterations":
            new = str(int(value) * 2)
        else:
            new = '"' + doubled_duration(value.strip('"')) + '"'
        text = text[: m.start(2)] + new + text[m.end(2) :]
    return text


def with_row_windows_doubled(text: str, keys: list) -> str:
    """Doubles `keys` in the `[windows]` table's inline entries (`16 = { warmup = "1s", ... }`)."""
    m = re.search(r"^\[windows\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not m or not keys:
        return text
    pat = re.compile(rf'\b({"|".join(keys)})(\s*=\s*)"([^"]+)"')
    body = pat.sub(lambda k: f'{k.group(1)}{k.group(2)}"{doubled_duration(k.group(3))}"', m.group(1))
    return text[: m.start(1)] + body + text[m.end(1) :]


def means(out: Path) -> dict:
    summaries = list(out.rglob("summary.json"))
    if len(summaries) != 1:
        raise RuntimeError(f"{out}: expected one summary.json, found {len(summaries)}")
    s = json.loads(summaries[0].read_text())
    return {(r["kernel"], r["threads"]): (r.get("hmean") or r["mean"]) for r in s["rows"]}


def reproduce(tlblab: str, exp: Path, out: Path, jobs: int) -> None:
    cmd = [tlblab, "reproduce", str(exp), "--out", str(out), "--jobs", str(jobs)]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("--double", default="warmup,duration")
    ap.add_argument("--tolerance", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tlblab", default=str(ROOT / "target/release/tlblab"))
    ap.add_argument("--keep")
    ap.add_argument("--replace", action="append", default=[])
    ap.add_argument("--with", dest="with_", action="append", default=[])
    try:
        a = ap.parse_args(argv[1:])
    except SystemExit:
        return 2
    path = Path(a.experiment)
    if not path.is_file():
        path = ROOT / "experiments" / f"{a.experiment}.toml"
    keys = [k for k in a.double.split(",") if k]
    if not path.is_file() or any(k not in ("warmup", "duration", "iterations") for k in keys):
        print(f"converge.py: no experiment `{a.experiment}` or `--double {a.double}` not among "
              "warmup, duration, iterations", file=sys.stderr)
        return 2
    if len(a.replace) != len(a.with_) or not (keys or a.replace):
        print("converge.py: give each --replace a --with, and something to change", file=sys.stderr)
        return 2
    text = path.read_text()
    tomllib.loads(text)
    try:
        doubled = with_doubled(text, keys)
        for old, new in zip(a.replace, a.with_):
            if old not in doubled:
                raise ValueError(f"`{old}` does not occur")
            doubled = doubled.replace(old, new)
    except ValueError as e:
        print(f"converge.py: {path}: {e}", file=sys.stderr)
        return 2
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="converge-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "variant.toml").write_text(doubled)
    reproduce(a.tlblab, path, work / "as-written", a.jobs)
    reproduce(a.tlblab, work / "variant.toml", work / "variant", a.jobs)
    base, dbl = means(work / "as-written"), means(work / "variant")
    worst = 0.0
    what = [f"doubling {', '.join(keys)}"] if keys else []
    what += [f"`{o}` -> `{n}`" for o, n in zip(a.replace, a.with_)]
    print(f"{path.stem}: {'; '.join(what)}; kernel, row: as written -> variant (change)")
    for cell in sorted(base):
        b, d = base[cell], dbl[cell]
        change = 100.0 * (d / b - 1.0) if b else float("inf")
        worst = max(worst, abs(change))
        print(f"  {cell[0]:<14} {cell[1]:>6}: {b:.6g} -> {d:.6g} ({change:+.2f}%)")
    ok = worst < a.tolerance
    print(f"largest change {worst:.2f}% ({'within' if ok else 'NOT within'} {a.tolerance}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
