#!/usr/bin/env python3
"""Checks that two saved result sets ran the same simulation, run by run, to the last bit.

    python3 scripts/compare_results.py OLD_DIR NEW_DIR

OLD_DIR and NEW_DIR are `reproduce --out` (or `sweep --out`) directories. For every cell file
(`cells/**/*.json`) of either side, every run must agree exactly on its metric, per-task
iterations, event counters, attribution and oracle findings. The recorded configuration may only
gain keys (a new knob or field): the keys it gained are listed; a key that changed or vanished
is an error. Exit code 0 when every run agrees, 1 otherwise, 2 on bad arguments.

This is the acceptance test of a pure refactor: results byte-identical where nothing was added.
"""
import json
import sys
from pathlib import Path

SAME = ("metric", "iterations", "counters", "attribution", "oracle")


def cells(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("cells/**/*.json"))}


def config_diff(old, new, path=""):
    """(gained, problems): keys only `new` has, and keys changed or lost."""
    if isinstance(old, dict) and isinstance(new, dict):
        gained, problems = [], []
        for k in old:
            if k not in new:
                problems.append(f"{path}{k}: gone")
            else:
                g, p = config_diff(old[k], new[k], f"{path}{k}.")
                gained += g
                problems += p
        gained += [f"{path}{k}" for k in new if k not in old]
        return gained, problems
    if old != new:
        return [], [f"{path.rstrip('.')}: {json.dumps(old)[:80]} -> {json.dumps(new)[:80]}"]
    return [], []


def main(argv) -> int:
    if len(argv) != 3 or not all(Path(a).is_dir() for a in argv[1:]):
        print("usage: compare_results.py OLD_DIR NEW_DIR (two result directories)", file=sys.stderr)
        return 2
    old_root, new_root = Path(argv[1]), Path(argv[2])
    old, new = cells(old_root), cells(new_root)
    bad, runs, gained_all = [], 0, set()
    for rel in sorted(set(old) | set(new)):
        if rel not in new or rel not in old:
            bad.append(f"{rel}: only in {'OLD' if rel in old else 'NEW'}")
            continue
        a, b = json.loads(old[rel].read_text()), json.loads(new[rel].read_text())
        if len(a["runs"]) != len(b["runs"]):
            bad.append(f"{rel}: {len(a['runs'])} runs vs {len(b['runs'])}")
            continue
        for i, (ra, rb) in enumerate(zip(a["runs"], b["runs"])):
            runs += 1
            for key in SAME:
                if ra.get(key) != rb.get(key):
                    bad.append(f"{rel} run {i}: `{key}` differs")
            gained, problems = config_diff(ra["config"], rb["config"], "config.")
            gained_all.update(gained)
            bad += [f"{rel} run {i}: {p}" for p in problems]
        gained, problems = config_diff(a["spec"], b["spec"], "spec.")
        gained_all.update(gained)
        bad += [f"{rel}: {p}" for p in problems if not p.startswith("spec.tlblab_version")]
    for line in bad[:50]:
        print("DIFFERS", line)
    if gained_all:
        print("configuration gained:", ", ".join(sorted(gained_all)))
    print(f"{runs} runs in {len(old)} cells compared: {'identical' if not bad else f'{len(bad)} differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
