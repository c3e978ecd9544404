#!/usr/bin/env python3
"""The cost law: CPU seconds per simulated second of a will-it-scale shootdown storm as
the task count grows, per remote flush request, with peak memory.

    python3 scripts/speed_scaling.py [BINARY] [--rounds N] [--duration 20ms]

Each point runs `tlblab run ... --warmup 10ms --duration D --json` and the same with a 0.1 ms
window under /usr/bin/time; the difference of the CPU times over the difference of the windows
is the cost of one simulated second without start-up (the minimum over N rounds: the machine is
shared). Requests per simulated second come from the run's `remote_flushes_received`. The fitted
law is cost ~ a x tasks^b by least squares on the logs. tlb_flush1 (speed.sh's yardstick) caches
128 MiB of files per task, which the model's 4 GiB per node holds for at most 60 tasks, so the
scaling table runs tlb_flush2 (one anonymous page per operation), which has no such limit. The
10 ms warm-up is past the start-up convoy on mmap_lock (at 192 tasks a 1 ms warm-up still
measures tasks asleep on it; 5 ms does not).
"""
import json
import math
import subprocess
import sys
import tempfile

POINTS = [("skylake-sp-2s", 8), ("skylake-sp-2s", 16), ("skylake-sp-2s", 32), ("skylake-sp-2s", 56),
          ("sapphire-rapids-2s", 112), ("sapphire-rapids-2s", 224)]
WORKLOAD = "tlb_flush2_threads"


def timed(binary, machine, tasks, duration):
    """(user+sys seconds, peak RSS KiB, the run's JSON)."""
    with tempfile.NamedTemporaryFile("r") as t:
        out = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", t.name, binary, "run", "--machine", machine,
             "--workload", WORKLOAD, "--threads", str(tasks), "--kernel", "5.18.1", "--warmup", "10ms",
             "--duration", duration, "--json"],
            check=True, capture_output=True, text=True).stdout
        u, s, m = t.read().split()
    return float(u) + float(s), int(m), json.loads(out)


def ms(d):
    assert d.endswith("ms"), "durations in ms, e.g. 2ms"
    return float(d[:-2]) / 1e3


def main():
    args = sys.argv[1:]
    rounds, duration, binary = 3, "20ms", "target/release/tlblab"
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--duration":
            duration = args.pop(0)
        else:
            binary = a
    rows = []
    for machine, tasks in POINTS:
        long_cpu = short_cpu = math.inf
        rss = 0
        for _ in range(rounds):
            c, m, run = timed(binary, machine, tasks, duration)
            long_cpu, rss = min(long_cpu, c), max(rss, m)
            short_cpu = min(short_cpu, timed(binary, machine, tasks, "0.1ms")[0])
        window = ms(duration) - 1e-4
        per_sim_s = max(long_cpu - short_cpu, 0.0) / window
        requests = run["counters"]["remote_flushes_received"] / ms(duration)
        rows.append((machine, tasks, per_sim_s, requests, rss))
        print(f"{machine:20} {tasks:4} tasks: {per_sim_s:8.1f} CPU-s per simulated s, "
              f"{requests / 1e6:7.2f} M remote flush requests per simulated s, "
              f"{1e9 * per_sim_s / requests if requests else float('nan'):6.0f} ns per request, "
              f"peak {rss / 1024:.0f} MiB", flush=True)
    xs = [math.log(t) for _, t, c, _, _ in rows if c > 0]
    ys = [math.log(c) for _, t, c, _, _ in rows if c > 0]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = math.exp(my - b * mx)
    print(f"fit: CPU-s per simulated s ~ {a:.3g} x tasks^{b:.2f} ({WORKLOAD}, 5.18.1, {duration} windows, "
          f"min of {rounds})")


if __name__ == "__main__":
    main()
