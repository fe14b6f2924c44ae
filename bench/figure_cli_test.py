#!/usr/bin/env python3
"""CTest figure_cli: `detdb-bench figure` end to end.
- table2, simulated from a calibration file: a row per depth and lock
  manager in DIR/table2.csv, and DIR/table2.png;
- fig9 --real --figure_points=2: a real cluster of 2 `detdb` processes per
  lock manager and variant, every figure positive, the simulation's
  prediction beside it;
- a point the figure does not have is refused.
Usage: figure_cli_test.py DETDB_BENCH"""
import csv
import os
import subprocess
import sys
import tempfile

COSTS = """# detdb simulation costs (virtual ns), made up for this test
exec_txn_ns 400
exec_key_ns 130
handoff_ns 4000
net_ns 60000
lock_txn_extra_ns 1400
worker_txn_extra_ns 1400
front_txn_ns 1600
lock_txn_ns.dclp 60
lock_key_ns.dclp 10
lock_txn_ns.vll 150
lock_key_ns.vll 8
"""


def run(args, timeout):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def main():
    bench = sys.argv[1]
    d = tempfile.mkdtemp(prefix="detdb-figure-")
    costs = os.path.join(d, "costs.txt")
    with open(costs, "w") as f:
        f.write(COSTS)
    # Short simulations and runs: under TSan this test took 100 s with
    # --sim_duration=0.2 and --duration=1 (30 s now); what it checks is the
    # command's shape, not the figures.
    common = [f"--calibration={costs}", "--sim_duration=0.05", "--sim_warmup=0.02",
              "--figure_lock_managers=dclp,vll", f"--out={d}"]

    rc, out = run([bench, "figure", "table2"] + common, 300)
    assert rc == 0, out
    rows = list(csv.DictReader(open(os.path.join(d, "table2.csv"), newline="")))
    assert [(r["x"], r["series"]) for r in rows] == [(x, m) for x in ("9", "19", "99") for m in ("dclp", "vll")], rows
    # 4 workers + a lock thread + sequencer + client: simulated on a small
    # host, real threads where the cores exist.
    assert all(r["mode"] in ("simulated", "real") and float(r["txns_per_sec"]) > 0 for r in rows), rows
    assert os.path.getsize(os.path.join(d, "table2.png")) > 0

    rc, out = run([bench, "figure", "fig9", "--real", "--figure_points=2", "--duration=0.5", "--workers=1",
                   "--outstanding=400"] + common, 600)
    assert rc == 0, out
    rows = list(csv.DictReader(open(os.path.join(d, "fig9.csv"), newline="")))
    assert [r["series"] for r in rows] == ["dclp 10%", "vll 10%", "dclp 20%", "vll 20%"], rows
    for r in rows:
        assert r["x"] == "2" and r["mode"] == "real cluster of 2", r
        assert float(r["txns_per_sec"]) > 0 and float(r["sim_txns_per_sec"]) > 0, r
    assert "[real cluster of 2]" in out, out

    rc, out = run([bench, "figure", "fig9", "--figure_points=3"] + common, 60)
    assert rc == 2 and "has no point 3" in out, (rc, out)
    print("figure_cli: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
