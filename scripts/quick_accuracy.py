#!/usr/bin/env python3
"""How far each experiment's quick run is from its full run, written into the experiment.

    python3 scripts/quick_accuracy.py [--tlblab PATH] [--jobs N] [--check] [NAME ...]

Runs `tlblab reproduce NAME --quick` and `tlblab reproduce NAME` (same seeds), compares the
means cell by cell (column x row: |quick / full - 1|) and the claims' verdicts, and writes the
result as the experiment's `[quick_accuracy]` table (experiments/NAME.toml), which quick pages
print. No result depends on it. Without NAME: every built-in experiment. With --check nothing is
written: it prints the measurement and exits 1 when a stored one is more than 0.1 point off
(a model change moved the quick run or the full run since).
"""
import argparse
import datetime
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(tlblab, name, quick, out, jobs):
    cmd = [tlblab, "reproduce", name, "--out", str(out), "--jobs", str(jobs)]
    if quick:
        cmd.append("--quick")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    d = out / name
    rows = json.loads((d / "summary.json").read_text())["rows"]
    means = {(r["kernel"], r["threads"]): r["mean"] for r in rows}
    verdicts = {c["id"]: c["reproduced"] for c in json.loads((d / "claims.json").read_text())}
    return means, verdicts


def measure(tlblab, name, jobs):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        q, qv = run(tlblab, name, True, tmp / "quick", jobs)
        f, fv = run(tlblab, name, False, tmp / "full", jobs)
    diffs = []
    for key, full in sorted(f.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if key in q and full:
            diffs.append((abs(q[key] / full - 1.0) * 100.0, key))
    if not diffs:
        sys.exit(f"quick_accuracy: {name}: no cell in common between the quick and the full run")
    worst = max(diffs, key=lambda d: d[0])
    return {
        "cells": len(diffs),
        "median_pct": round(statistics.median(d for d, _ in diffs), 1),
        "max_pct": round(worst[0], 1),
        "max_cell": f"{worst[1][0]} at {worst[1][1]}",
        "verdicts_same": sum(1 for k, v in fv.items() if qv.get(k) == v),
        "verdicts": len(fv),
    }


SECTION = re.compile(r"\n# How far the quick run is from the full run.*?\n\[quick_accuracy\]\n(?:[^\[\n][^\n]*\n)*", re.S)


def stored(text):
    m = SECTION.search(text)
    if not m:
        return None
    out = {}
    for line in m.group(0).splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = (s.strip() for s in line.split("=", 1))
            out[k] = json.loads(v)
    return out


def write(path, m, measured):
    text = SECTION.sub("\n", path.read_text()).rstrip("\n") + "\n"
    text += (
        "\n# How far the quick run is from the full run: measured by scripts/quick_accuracy.py, printed\n"
        "# on quick pages; not an input to any result.\n[quick_accuracy]\n"
        f"measured = {json.dumps(measured)}\n"
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in m.items())
    )
    path.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--tlblab", default=str(ROOT / "target/release/tlblab"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    names = a.names or sorted(p.stem for p in (ROOT / "experiments").glob("*.toml"))
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    measured = f"{datetime.date.today().isoformat()} at {commit or 'an unknown commit'}"
    bad = 0
    for name in names:
        path = ROOT / "experiments" / f"{name}.toml"
        if not path.is_file():
            sys.exit(f"quick_accuracy: experiments/{name}.toml: no such experiment")
        m = measure(a.tlblab, name, a.jobs)
        print(f"{name}: {m['cells']} cells, median {m['median_pct']}%, max {m['max_pct']}% "
              f"({m['max_cell']}), verdicts {m['verdicts_same']}/{m['verdicts']}", flush=True)
        if a.check:
            old = stored(path.read_text())
            if old is None or any(
                abs(old.get(k, -1) - m[k]) > 0.1 if isinstance(m[k], float) else old.get(k) != m[k]
                for k in m
            ):
                print(f"  stored: {old}", flush=True)
                bad += 1
        else:
            write(path, m, measured)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
