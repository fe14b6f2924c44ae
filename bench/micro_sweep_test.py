#!/usr/bin/env python3
"""CTest micro_sweep_cli: bench/micro_sweep.py runs a short sweep through
detdb-bench and prints a row per workload and the summary; its CSV read back
with --from_csv gives the same summary; and the classification of a made-up
CSV (dclp ahead, within 10%, behind) is what the numbers say.
Usage: micro_sweep_test.py DETDB_BENCH SWEEP_SCRIPT"""
import csv
import os
import subprocess
import sys
import tempfile

MANAGERS = ["dclp", "det2pl", "vll", "vll_sca", "dclp_frag"]


def summary(text):
    """The summary table's rows: {(workers, metric): (leads, within, behind)}."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and " of " in cells[2]:
            out[(cells[0], cells[1])] = (int(cells[2].split(" of ")[0]), int(cells[3]), int(cells[4]))
    return out


def main():
    bench, sweep = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="detdb-sweep-")

    # A real sweep: 3 depth workloads, every manager, 1 round each.
    out_csv = os.path.join(d, "sweep.csv")
    p = subprocess.run([sys.executable, sweep, f"--bench={bench}", "--only=depth", "--rounds=1", "--duration=0.3",
                        f"--csv={out_csv}", "--", "--records=20000"], capture_output=True, text=True, timeout=280)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = [l for l in p.stdout.splitlines() if l.startswith("| 1 | depth")]
    assert len(rows) == 3, p.stdout
    s = summary(p.stdout)
    assert len(s) == 4, p.stdout  # four metrics for 1 worker
    for counts in s.values():
        assert sum(counts) == 3, s
    managers = {r["lock_manager"] for r in csv.DictReader(open(out_csv, newline=""))}
    assert managers == set(MANAGERS), managers
    back = subprocess.run([sys.executable, sweep, f"--from_csv={out_csv}"], capture_output=True, text=True,
                          timeout=60)
    assert back.returncode == 0, back.stderr
    assert summary(back.stdout) == s, (back.stdout, p.stdout)

    # Made-up figures: workload A dclp leads everything; B the best other
    # is 5% ahead in throughput; C 25% ahead, and dclp's lock thread costs
    # twice as much per txn but its workers ran twice as slow too (the
    # machine's slow mode), so per worker CPU it is as cheap as the rest.
    fake = os.path.join(d, "fake.csv")
    with open(fake, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workers", "group", "workload", "lock_manager", "txns_per_sec", "cpu_us_per_txn",
                    "lock_us_per_txn", "worker_us_per_txn"])
        for m in MANAGERS:
            d_ = m == "dclp"
            w.writerow([1, "g", "A", m, 100 if d_ else 90, 4 if d_ else 5, 1 if d_ else 1.2, 2])
            w.writerow([1, "g", "B", m, 100 if d_ else (105 if m == "vll" else 95), 5, 1, 2])
            w.writerow([1, "g", "C", m, 100 if d_ else (125 if m == "vll" else 95), 8 if d_ else 4,
                        2 if d_ else 1, 4 if d_ else 2])
    q = subprocess.run([sys.executable, sweep, f"--from_csv={fake}"], capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    got = summary(q.stdout)
    want = {("1", "throughput"): (1, 1, 1), ("1", "process CPU per txn"): (2, 0, 1),
            ("1", "lock thread CPU per txn"): (2, 0, 1), ("1", "lock thread CPU per worker CPU"): (3, 0, 0)}
    assert got == want, (got, q.stdout)
    print("micro_sweep_cli: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
