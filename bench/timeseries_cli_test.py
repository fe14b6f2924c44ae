#!/usr/bin/env python3
"""CTest timeseries_cli: detdb-bench micro --timeseries writes one row per
second per run with plausible figures, and plot_timeseries.py renders it.
Usage: timeseries_cli_test.py DETDB_BENCH PLOT_SCRIPT"""
import csv
import os
import subprocess
import sys
import tempfile


def main():
    bench, plot = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="detdb-ts-")
    ts = os.path.join(d, "ts.csv")
    p = subprocess.run([bench, "micro", "--lock_manager=dclp,vll", "--duration=2.5", "--records=100000",
                        f"--timeseries={ts}"], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "time series written to" in p.stderr, p.stderr[-2000:]
    rows = list(csv.DictReader(open(ts, newline="")))
    runs = {}
    for r in rows:
        runs.setdefault(r["run"], []).append(r)
    assert set(runs) == {"dclp", "vll"}, runs.keys()
    for name, rs in runs.items():
        assert len(rs) >= 2, (name, rs)  # about one per second of a 2.5 s run
        ts_ = [float(r["t_s"]) for r in rs]
        assert ts_ == sorted(ts_), ts_
        committed = [int(r["committed"]) for r in rs]
        assert committed == sorted(committed), committed
        assert all(float(r["txns_per_s"]) > 0 for r in rs), rs
        assert any(r["p99_us"] and float(r["p99_us"]) >= float(r["p50_us"]) > 0 for r in rs), rs
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("python3-matplotlib missing: plot not checked")
        return 0
    png = os.path.join(d, "ts.png")
    p = subprocess.run([sys.executable, plot, ts, png], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    print(f"ok: {len(rows)} rows, plot {os.path.getsize(png)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
