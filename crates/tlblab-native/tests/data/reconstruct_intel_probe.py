#!/usr/bin/env python3
"""Writes probe-xeon-kvm-reconstructed.json: NOT a recording.

No session has yet recorded `tlblab probe --json` on an Intel host. This reconstructs the parts
of such a report that the probe's derivations went wrong on, from what was seen on the Intel Xeon
KVM guest of 2026-11-26 (2 vCPUs, family 6 model 167 as the hypervisor reports it, Linux 6.18):

- the clock: a chain of `add reg, 1` read 22,928 MHz (the core folds immediate adds at rename), a
  dependent 64-bit multiply chain ~4,100 MHz;
- CPUID: leaf 0x2 points at leaf 0x18, which reads as zeros, so CPUID gives no TLB geometry;
  leaves 0x15 and 0x16 are taken as zeros too (not recorded there);
- the TLB-reach chase: no penalty up to 12,288 pages, a penalty from 16,384.

Everything else (the cache ladder, the shootdown sweep, faults, syscalls, the huge-page baseline
of the reach chase) is the AMD recording `probe-epyc-kvm-busy-full.json`, unchanged. The reach
chase's 4 KiB times are that recording's huge-page times plus an assumed penalty curve: none up
to 64 pages (an L1 DTLB of 64 entries, assumed), 1.7 ns (7 cycles at 4.1 GHz, assumed) up to
12,288 pages, 1.7 + 6.0 ns beyond (a walk, assumed), with +-0.1 ns of seeded noise.

Run from this directory: python3 reconstruct_intel_probe.py
"""
import json
import random

SRC = "probe-epyc-kvm-busy-full.json"
OUT = "probe-xeon-kvm-reconstructed.json"


def regs_of(text, n):
    """`text` as n little-endian 32-bit registers (NUL padded)."""
    b = text.encode().ljust(4 * n, b"\0")
    return [int.from_bytes(b[4 * i:4 * i + 4], "little") for i in range(n)]


def cpuid_dump():
    brand = regs_of("Intel Xeon Processor (reconstructed)", 12)
    leaves = {
        (0x0, 0): [0x20, *regs_of("GenuineIntel", 3)],
        # family 6 model 167: extended model 0xa, model 7; ECX: PCID (17), hypervisor (31).
        (0x1, 0): [0x000A0671, 0x00000800, 0x80020000, 0x00000000],
        (0x2, 0): [0x00FEFF01, 0, 0, 0],
        (0x7, 0): [0, 1 << 10, 0, 0],  # INVPCID
        (0x15, 0): [0, 0, 0, 0],
        (0x16, 0): [0, 0, 0, 0],
        (0x18, 0): [0, 0, 0, 0],
        (0x40000000, 0): [0x40000001, *regs_of("KVMKVMKVM", 3)],
        (0x40000001, 0): [1 << 9, 0, 0, 0],  # PV TLB flush
        (0x80000000, 0): [0x80000008, 0, 0, 0],
        (0x80000002, 0): brand[0:4],
        (0x80000003, 0): brand[4:8],
        (0x80000004, 0): brand[8:12],
        (0x80000008, 0): [0x00003030, 0, 0, 0],
    }
    # Leaf 0's vendor registers are EBX, EDX, ECX.
    v = leaves[(0x0, 0)]
    leaves[(0x0, 0)] = [v[0], v[1], v[3], v[2]]
    return "".join(f"{l:#010x} {s:#x}: {r[0]:08x} {r[1]:08x} {r[2]:08x} {r[3]:08x}\n" for (l, s), r in sorted(leaves.items()))


def summary(xs):
    s = sorted(xs)
    q = lambda f: s[int(f * (len(s) - 1))] + (s[min(int(f * (len(s) - 1)) + 1, len(s) - 1)] - s[int(f * (len(s) - 1))]) * (f * (len(s) - 1) - int(f * (len(s) - 1)))
    med = q(0.5)
    return {"median": med, "min": s[0], "max": s[-1], "rel_iqr": abs((q(0.75) - q(0.25)) / med) if med else 0.0, "n": len(s)}


def penalty(pages):
    if pages <= 64:
        return 0.0
    if pages <= 12288:
        return 1.7
    return 1.7 + 6.0


def main():
    d = json.load(open(SRC))
    rng = random.Random(30)
    d["date"] = "2026-11-26"
    d["host"].update(vendor="intel", model_name="Intel Xeon Processor (reconstructed)", family=6, model=167,
                     invlpgb=False, cpuinfo_mhz=None)
    d["cpuid_dump"] = cpuid_dump()
    d["cpuid_l2"] = None
    d["clock_mhz"] = summary([22928.3 * f for f in (0.995, 1.0, 1.002, 0.998, 1.003)])
    d["clock_imul_mhz"] = summary([4100.0 * f for f in (0.996, 1.0, 1.001, 0.999, 1.004)])
    d["kernel_clock"] = {"cpufreq_base_mhz": None, "cpufreq_max_mhz": None}
    pages = [p["pages"] for p in d["reach"]["points"]]
    for b in d["reach"]["blocks"]:
        b["ns_4k"] = [t + penalty(n) + rng.uniform(-0.1, 0.1) for n, t in zip(pages, b["ns_thp"])]
    for i, p in enumerate(d["reach"]["points"]):
        blocks = d["reach"]["blocks"]
        p["ns_4k"] = summary([b["ns_4k"][i] for b in blocks])
        p["penalty_ns"] = summary([b["ns_4k"][i] - b["ns_thp"][i] for b in blocks])
    for k in ("cpuid_tlb", "reach_analysis", "shootdown_costs", "clock"):
        d.pop(k, None)
    d["notes"] = ["NOT a recording: reconstructed by reconstruct_intel_probe.py (see its docstring)"]
    with open(OUT, "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")


main()
