#!/usr/bin/env python3
"""Plots one figure's CSV (written by `detdb-bench figure NAME --out DIR`).

usage: plot_figure.py CSV PNG TITLE XLABEL [logx|symlogx]

The CSV has the columns figure,x,series,txns_per_sec,mode[,sim_txns_per_sec];
one line per series (lock manager), throughput against x. With the sim
column (a --real run), the simulation's prediction is drawn dashed beside it.
Needs python3-matplotlib (deploy/install-deps.sh installs it).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    path, png, title, xlabel = sys.argv[1:5]
    logx = len(sys.argv) > 5 and sys.argv[5] == "logx"
    symlogx = len(sys.argv) > 5 and sys.argv[5] == "symlogx"  # log, with 0 on the axis
    series, sim, modes = {}, {}, set()
    with open(path) as f:
        for row in csv.DictReader(f):
            x = float(row["x"])
            series.setdefault(row["series"], []).append((x, float(row["txns_per_sec"])))
            if row.get("sim_txns_per_sec"):
                sim.setdefault(row["series"], []).append((x, float(row["sim_txns_per_sec"])))
            modes.add(row["mode"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, pts in series.items():
        pts.sort()
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        if name in sim:
            s = sorted(sim[name])
            ax.plot([p[0] for p in s], [p[1] for p in s], linestyle="--", color=line.get_color(),
                    label=name + " (simulated)")
    if logx:
        ax.set_xscale("log")
    if symlogx:
        positive = [x for pts in series.values() for x, _ in pts if x > 0]
        ax.set_xscale("symlog", linthresh=min(positive) if positive else 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("throughput (txns/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title + " [" + ", ".join(sorted(modes)) + "]", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
