#!/usr/bin/env python3
"""Checks that two saved result sets ran the same simulation, run by run, to the last bit.

    python3 scripts/compare_results.py OLD_DIR NEW_DIR

OLD_DIR and NEW_DIR are `reproduce --out` (or `sweep --out`) directories. For every cell file
(`cells/**/*.json`) of either side, every run must agree exactly on its metric, per-task
iterations, event counters, attribution and oracle findings. The recorded configuration may only
gain keys (a new knob or field): the keys it gained are listed; a key that changed or vanished
is an error. Likewise a run may gain counters that are zero in it (a new subsystem's, which the
old runs never reached): listed, not an error. Exit code 0 when every run agrees, 1 otherwise, 2 on bad arguments.

This is the acceptance test of a pure refactor: results byte-identical where nothing was added.

Result schema 1 (cells before the knobs were recorded by subsystem) is read through one
migration, `migrate_v1`, so a schema-1 set compares against a schema-2 one: the renamed keys are
listed, not reported as problems. Provenance text of the machine profile (`source`,
`*_source`) is documentation, not an input of the run: a changed one is listed, not an error.
"""
import json
import sys
from pathlib import Path

SAME = ("metric", "iterations", "counters", "attribution", "oracle")

# Schema 1 recorded the flush, mm and text knobs flat; schema 2 groups them by subsystem.
V1_GROUPS = {
    "flush": ("policy", "generations", "early_return", "read_tlb_gen", "concurrent_local",
              "coalesce_ipis", "lazy_ipis", "pti"),
    "mm": ("mmap_lock", "free_before_flush"),
    "text": ("kernel_tlb",),
}
# Schema 1 wrote `coalesce_ipis` as serde's always/never; schema 2 as it is set, on/off.
V1_COALESCE = {"always": "on", "never": "off", "lone": "lone"}


def migrate_knobs_v1(flat: dict, renamed: set, where: str) -> dict:
    """Schema-1 flat knobs as schema 2's groups; each moved key goes into `renamed`."""
    out = dict(flat)
    for group, keys in V1_GROUPS.items():
        out[group] = {}
        for k in keys:
            if k in flat:
                out[group][k] = out.pop(k)
                renamed.add(f"{where}.{k} -> {where}.{group}.{k}")
    if "coalesce_ipis" in out["flush"]:
        out["flush"]["coalesce_ipis"] = V1_COALESCE[out["flush"]["coalesce_ipis"]]
    return out


def migrate_v1(cell: dict, renamed: set) -> dict:
    """A schema-1 cell file in schema 2's layout; anything else unchanged."""
    if cell.get("schema_version", 1) != 1:
        return cell
    cell = json.loads(json.dumps(cell))
    kernel = cell["spec"]["kernel"]
    if "flush" in kernel:
        kernel["knobs"] = migrate_knobs_v1(kernel.pop("flush"), renamed, "spec.kernel.knobs")
        renamed.add("spec.kernel.flush -> spec.kernel.knobs")
    for r in cell["runs"]:
        r["config"]["knobs"] = migrate_knobs_v1(r["config"]["knobs"], renamed, "config.knobs")
        r["schema_version"] = 2
    cell["schema_version"] = 2
    return cell


def provenance(problem: str) -> bool:
    """A problem with a profile's provenance text: where a number comes from, not what it is."""
    path = problem.split(": ", 1)[0]
    key = path.rsplit(".", 1)[-1]
    return path.startswith("spec.machine.") and (key == "source" or key.endswith("_source"))


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
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        gained, problems = [], []
        for i, (a, b) in enumerate(zip(old, new)):
            g, p = config_diff(a, b, f"{path.rstrip('.')}[{i}].")
            gained += g
            problems += p
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
    bad, runs, gained_all, renamed, sources = [], 0, set(), set(), set()
    counters_gained = set()
    for rel in sorted(set(old) | set(new)):
        if rel not in new or rel not in old:
            bad.append(f"{rel}: only in {'OLD' if rel in old else 'NEW'}")
            continue
        a = migrate_v1(json.loads(old[rel].read_text()), renamed)
        b = migrate_v1(json.loads(new[rel].read_text()), renamed)
        if len(a["runs"]) != len(b["runs"]):
            bad.append(f"{rel}: {len(a['runs'])} runs vs {len(b['runs'])}")
            continue
        for i, (ra, rb) in enumerate(zip(a["runs"], b["runs"])):
            runs += 1
            for key in SAME:
                va, vb = ra.get(key), rb.get(key)
                if key == "counters" and isinstance(va, dict) and isinstance(vb, dict):
                    # A counter the new model added, zero in a run that never reached its code.
                    new_zero = [k for k in vb if k not in va and vb[k] == 0]
                    counters_gained.update(new_zero)
                    vb = {k: v for k, v in vb.items() if k not in new_zero}
                if va != vb:
                    bad.append(f"{rel} run {i}: `{key}` differs")
            gained, problems = config_diff(ra["config"], rb["config"], "config.")
            gained_all.update(gained)
            bad += [f"{rel} run {i}: {p}" for p in problems]
        gained, problems = config_diff(a["spec"], b["spec"], "spec.")
        gained_all.update(gained)
        sources.update(p.split(": ", 1)[0] for p in problems if provenance(p))
        bad += [f"{rel}: {p}" for p in problems if not p.startswith("spec.tlblab_version") and not provenance(p)]
    for line in bad[:50]:
        print("DIFFERS", line)
    if renamed:
        print("schema 1 -> 2 renamed:", ", ".join(sorted(renamed)))
    if gained_all:
        print("configuration gained:", ", ".join(sorted(gained_all)))
    if counters_gained:
        print("counters gained (zero in every run that has them):", ", ".join(sorted(counters_gained)))
    if sources:
        print(f"provenance text changed (not compared): {len(sources)} profile keys")
    print(f"{runs} runs in {len(old)} cells compared: {'identical' if not bad else f'{len(bad)} differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
