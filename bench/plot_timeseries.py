#!/usr/bin/env python3
"""Plots detdb-bench's --timeseries CSV: throughput and p99 latency over
time, one line per run (lock manager and round).

  build/release/bench/detdb-bench micro --compare --timeseries=/tmp/ts.csv
  bench/plot_timeseries.py /tmp/ts.csv /tmp/ts.png

Needs python3-matplotlib (deploy/install-deps.sh installs it).
"""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src, out = sys.argv[1], sys.argv[2]
    series = {}
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.stderr.write(f"{src}: no rows\n")
        return 1
    for r in rows:
        key = r["run"] if r["round"] in ("", "1") else f'{r["run"]} (round {r["round"]})'
        s = series.setdefault(key, {"t": [], "tps": [], "p99": [], "t99": []})
        t = float(r["t_s"])
        if r["txns_per_s"]:
            s["t"].append(t)
            s["tps"].append(float(r["txns_per_s"]))
        if r["p99_us"]:
            s["t99"].append(t)
            s["p99"].append(float(r["p99_us"]) / 1000.0)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for key, s in series.items():
        top.plot(s["t"], [v / 1000.0 for v in s["tps"]], marker="o", label=key)
        bottom.plot(s["t99"], s["p99"], marker="o", label=key)
    top.set_ylabel("throughput (K txns/s)")
    top.set_ylim(bottom=0)
    top.grid(True, alpha=0.3)
    top.legend(fontsize="small")
    bottom.set_ylabel("p99 latency (ms)")
    bottom.set_xlabel("seconds since the run started")
    bottom.set_ylim(bottom=0)
    bottom.grid(True, alpha=0.3)
    fig.suptitle(src)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out} ({len(series)} run(s), {len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
