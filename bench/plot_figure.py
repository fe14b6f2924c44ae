#!/usr/bin/env python3
"""Plots one figure's CSV (written by `detdb-bench figure NAME --out DIR`).

usage: plot_figure.py CSV PNG TITLE XLABEL [logx|symlogx]

The CSV has the columns figure,x,series,txns_per_sec,mode[,sim_txns_per_sec];
one line per series (lock manager), throughput against x. With the sim
column (a --real run), the simulation's prediction is drawn dashed beside it.
A CSV with ops_per_sec instead of txns_per_sec (figure elision: index
operations, not txns) is drawn the same way, labelled operations/s.
With a cpu_ns_per_txn column (figure staged), a second panel shows it: the
CPU cost, which a loaded host disturbs far less than the throughput.
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
    series, sim, cpu, modes = {}, {}, {}, set()
    ylabel = "throughput (txns/s)"
    with open(path) as f:
        for row in csv.DictReader(f):
            x = float(row["x"])
            if "ops_per_sec" in row:
                ylabel = "throughput (operations/s)"
                y = float(row["ops_per_sec"])
            else:
                y = float(row["txns_per_sec"])
            series.setdefault(row["series"], []).append((x, y))
            if row.get("cpu_ns_per_txn"):
                cpu.setdefault(row["series"], []).append((x, float(row["cpu_ns_per_txn"])))
            if row.get("sim_txns_per_sec"):
                sim.setdefault(row["series"], []).append((x, float(row["sim_txns_per_sec"])))
            modes.add(row["mode"])
    if cpu:
        fig, (ax, ax_cpu) = plt.subplots(1, 2, figsize=(11, 4.2))
        for name, pts in cpu.items():
            pts.sort()
            ax_cpu.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax_cpu.set_xlabel(xlabel)
        ax_cpu.set_ylabel("CPU ns per txn")
        ax_cpu.set_ylim(bottom=0)
        ax_cpu.grid(True, alpha=0.3)
        ax_cpu.legend(fontsize=8)
    else:
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
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title + " [" + ", ".join(sorted(modes)) + "]", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
