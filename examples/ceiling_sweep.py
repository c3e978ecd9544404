"""Sweep the kernel's flush ceiling (tlb_single_page_flush_ceiling) with ebizzy on two machines
and plot records/s against it, one line per machine and thread count.

    python examples/ceiling_sweep.py --out ceiling.png            # a quick look (seconds)
    python examples/ceiling_sweep.py --out ceiling.png --full     # what docs/balance-points.md ran

Needs the tlblab Python package (scripts/ensure_venv.sh installs it into .venv), pandas and
matplotlib. `--dask N` runs the cells on a local Dask cluster of N workers instead.
"""

import argparse

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

import tlblab

MACHINES = ["ivybridge-4c8t", "haswell-ep-2s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="ceiling.png", help="the plot (PNG)")
    ap.add_argument("--full", action="store_true", help="more values, seeds and simulated time")
    ap.add_argument("--dask", type=int, metavar="N", help="run on a LocalCluster of N workers")
    a = ap.parse_args()
    ceilings = [0, 8, 33, 64, 128, 256] if a.full else [0, 33, 128]
    threads = [1, 2, 4, 8] if a.full else [2, 4]
    run = dict(workload="ebizzy", vary={"ceiling": ceilings}, threads=threads, kernel="5.18.1",
               iterations=5 if a.full else 1, duration="20ms" if a.full else "1ms", warmup="200us")
    client = None
    if a.dask:
        from distributed import Client, LocalCluster

        client = Client(LocalCluster(n_workers=a.dask, threads_per_worker=1, dashboard_address=None))
    frames = [tlblab.sweep(machine=m, client=client, **run) for m in MACHINES]
    fig, axes = plt.subplots(1, len(MACHINES), figsize=(5 * len(MACHINES), 3.6), sharey=False)
    for ax, m, df in zip(axes, MACHINES, frames):
        mean = df.groupby(["threads", "ceiling"])["value"].agg(["mean", "std"]).reset_index()
        for t, g in mean.groupby("threads"):
            ax.errorbar(g["ceiling"], g["mean"], yerr=g["std"].fillna(0), marker="o", capsize=3,
                        label=f"{t} threads")
        best = mean.loc[mean.groupby("threads")["mean"].idxmax()]
        ax.set_title(f"{m}: best ceiling " + ", ".join(f"{r.ceiling} ({r.threads} thr)" for r in best.itertuples()),
                     fontsize=8)
        ax.set_xlabel("tlb_single_page_flush_ceiling (pages)")
        ax.set_ylabel(f"{df['metric'][0]} ({df['unit'][0]})")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"wrote {a.out}")
    if client is not None:
        client.close()


if __name__ == "__main__":
    main()
