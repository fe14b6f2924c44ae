#!/usr/bin/env python3
"""Runs the DCLP paper's section-4 microbenchmark workloads under every lock
manager and prints one table: dclp's throughput and every other manager's
as a ratio of it, and the same for process CPU time per txn (median of --rounds interleaved runs, from one process per
workload, so the ratios of a row were measured side by side).

  bench/micro_sweep.py                      # every workload, 1 worker
  bench/micro_sweep.py --workers=1,2 --rounds=3 --duration=2
  bench/micro_sweep.py --only=contention,depth --csv=out.csv
  bench/micro_sweep.py --from_csv=docs/figures/micro_sweep_2026-11-26.csv   # tables of an earlier run

After the rows, a summary counts per worker count how often dclp leads, is
within 10% of the best other manager, or is behind by more, for four
metrics: throughput, process CPU per txn, the lock thread's CPU per txn,
and the lock thread's CPU per txn divided by the workers' (the workers run
the same code under every manager, so this quotient is the steadiest
comparison of lock threads on a host whose speed changes between rounds).

Workload groups (--only): contention (0.0001, 0.01, 0.1), long (compute per
read), readonly, write5 (5% writes), writes (write share sweep at contention
0.1), depth (9, 19, 99), mp_low / mp_high (multi-partition share 0-100% on 2
partitions at contention 0.0001 / 0.1). Extra flags after `--` go to every
detdb-bench run.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

MANAGERS = ["dclp", "det2pl", "vll", "vll_sca", "dclp_frag"]


def workloads(compute_us):
    out = []
    for c in ("0.0001", "0.01", "0.1"):
        out.append(("contention", f"contention {c}", [f"--contention={c}"]))
    for c in ("0.0001", "0.1"):
        out.append(("long", f"long ({compute_us} us/read), contention {c}",
                    [f"--contention={c}", f"--compute_us={compute_us}"]))
    for c in ("0.0001", "0.1"):
        out.append(("readonly", f"read-only, contention {c}", [f"--contention={c}", "--write_fraction=0"]))
    for c in ("0.0001", "0.1"):
        out.append(("write5", f"5% writes, contention {c}", [f"--contention={c}", "--write_fraction=0.05"]))
    for w in ("0.2", "0.5", "0.8"):
        out.append(("writes", f"{float(w):.0%} writes, contention 0.1", ["--contention=0.1", f"--write_fraction={w}"]))
    for d in ("9", "19", "99"):
        out.append(("depth", f"depth {d}", [f"--depth={d}"]))
    for name, c in (("mp_low", "0.0001"), ("mp_high", "0.1")):
        for m in ("0", "0.1", "0.5", "1"):
            out.append((name, f"{float(m):.0%} multi-partition, contention {c}",
                        ["--partitions=2", f"--contention={c}", f"--multipartition={m}"]))
    return out


def run(bench, flags, workers, rounds, duration, extra):
    cmd = [bench, "micro", "--compare", "--json", f"--rounds={rounds}", f"--duration={duration}",
           f"--workers={workers}"] + flags + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}\n")
        return None
    out = {}
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            out[r["lock_manager"]] = r
    return out


def ratios_of(r, key, invert):
    """Every other manager's `key` over dclp's (invert: dclp's over theirs)."""
    base = r["dclp"].get(key) or 0
    out = []
    for m in MANAGERS[1:]:
        v = r[m].get(key) if m in r else None
        if not v or base <= 0:
            out.append(float("nan"))
        else:
            out.append(v / base if not invert else base / v)
    return base, out


def with_norm(r):
    """Adds lock_per_worker: the lock threads' CPU per txn over the workers'.
    The workers run the same code under every lock manager, so their CPU per
    txn is a yardstick of how fast the machine ran that round (this VM has
    fast and slow modes, up to 1.5x apart: docs/ENGINE.md); the quotient
    compares lock threads across rounds that ran in different modes."""
    for m in r.values():
        lock, work = m.get("lock_us_per_txn") or 0, m.get("worker_us_per_txn") or 0
        m["lock_per_worker"] = lock / work if work > 0 else 0
    return r


# Metric, key, "other / dclp" when True (higher is worse for dclp) else
# "dclp / other"; a manager "leads" when every ratio is >= 1.
METRICS = [("throughput", "txns_per_sec", True), ("process CPU per txn", "cpu_us_per_txn", False),
           ("lock thread CPU per txn", "lock_us_per_txn", False),
           ("lock thread CPU per worker CPU", "lock_per_worker", False)]


def classify(r, key, higher_better):
    """'lead', 'within' (the best other at most 10% ahead) or 'behind'."""
    _, rs = ratios_of(r, key, False)
    rs = [x for x in rs if x == x]
    if not rs:
        return "n/a"
    # rs: other / dclp. Throughput: dclp leads when every ratio <= 1; costs:
    # when every ratio >= 1.
    worst = max(rs) if higher_better else 1 / min(rs)
    return "lead" if worst <= 1.0 else "within" if worst <= 1.10 else "behind"


def print_header():
    cols = ["workers", "workload", "dclp txns/s"] + [f"{m}/dclp" for m in MANAGERS[1:]] + ["dclp leads"]
    cols += ["dclp cpu us/txn"] + [f"{m} cpu" for m in MANAGERS[1:]] + ["dclp cheapest"]
    cols += ["dclp lock-thread us/txn"] + [f"{m} lock" for m in MANAGERS[1:]] + ["dclp lock thread cheapest"]
    cols += ["dclp lock/worker"] + [f"{m} lock/worker" for m in MANAGERS[1:]] + ["cheapest per worker CPU"]
    print("| " + " | ".join(cols) + " |")
    print("| " + " | ".join("---" for _ in cols) + " |")
    sys.stdout.flush()


def print_row(w, label, r):
    cells = [str(w), label]
    for key, unit, higher_better in (("txns_per_sec", "K", True), ("cpu_us_per_txn", "", False),
                                     ("lock_us_per_txn", "", False), ("lock_per_worker", "", False)):
        base, rs = ratios_of(r, key, False)
        cells.append(f"{base / 1000:.0f}K" if unit == "K" else f"{base:.2f}")
        cells += [f"{x:.2f}x" for x in rs]
        cells.append("yes" if classify(r, key, higher_better) == "lead" else "NO")
    print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


def print_summary(results):
    """results: [(workers, label, r)]. How often dclp leads, per metric."""
    print()
    print("| workers | metric | dclp leads | best other within 10% | beyond 10% |")
    print("| --- | --- | ---: | ---: | ---: |")
    for w in sorted({x[0] for x in results}):
        rows = [r for ww, _, r in results if ww == w]
        for name, key, higher_better in METRICS:
            c = [classify(r, key, higher_better) for r in rows]
            print(f"| {w} | {name} | {c.count('lead')} of {len(rows)} | {c.count('within')} | {c.count('behind')} |")


def from_csv(path):
    """Reads a CSV this script wrote: [(workers, label, r)] in file order."""
    grouped = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            k = (int(row["workers"]), row["workload"])
            m = {x: float(row[x]) for x in ("txns_per_sec", "cpu_us_per_txn", "lock_us_per_txn",
                                              "worker_us_per_txn") if row.get(x) not in (None, "", "None")}
            grouped.setdefault(k, {})[row["lock_manager"]] = m
    return [(w, label, with_norm(r)) for (w, label), r in grouped.items() if "dclp" in r]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                    "release", "bench", "detdb-bench"))
    ap.add_argument("--workers", default="1", help="comma list of worker counts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2)
    ap.add_argument("--compute_us", type=float, default=5)
    ap.add_argument("--only", default="", help="comma list of workload groups")
    ap.add_argument("--csv", default="", help="also write every row to this CSV file")
    ap.add_argument("--from_csv", default="", help="run nothing: print the tables of a CSV written by --csv")
    ap.add_argument("extra", nargs="*", help="flags for detdb-bench (after --)")
    a = ap.parse_args()
    if a.from_csv:
        results = from_csv(a.from_csv)
        print_header()
        for w, label, r in results:
            print_row(w, label, r)
        print_summary(results)
        return 0 if results else 1
    groups = set(a.only.split(",")) if a.only else None
    rows, results = [], []
    print_header()
    for w in [int(x) for x in a.workers.split(",")]:
        for group, label, flags in workloads(a.compute_us):
            if groups and group not in groups:
                continue
            r = run(a.bench, flags, w, a.rounds, a.duration, a.extra)
            if r is None or "dclp" not in r:
                print(f"| {w} | {label} | failed |")
                continue
            with_norm(r)
            print_row(w, label, r)
            results.append((w, label, r))
            for m in MANAGERS:
                if m in r:
                    rows.append({"workers": w, "group": group, "workload": label, "lock_manager": m,
                                 "txns_per_sec": r[m]["txns_per_sec"], "avg_active": r[m].get("avg_active"),
                                 "window": r[m].get("window"), "blocked": r[m].get("blocked_at_admission"),
                                 "p99_us": r[m].get("p99_us"), "cpu_us_per_txn": r[m].get("cpu_us_per_txn"),
                                 "lock_us_per_txn": r[m].get("lock_us_per_txn"),
                                 "worker_us_per_txn": r[m].get("worker_us_per_txn")})
    if results:
        print_summary(results)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["workers"])
            wr.writeheader()
            wr.writerows(rows)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
