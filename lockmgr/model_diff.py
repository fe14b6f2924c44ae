#!/usr/bin/env python3
"""Differential test: detdb's C++ lock managers against the executable
reference model ../shared/design/lock_models.py.

For seeded random workloads this script runs each reference model under a
random interleaving of admissions and completions (the model's own harness
logic), records every operation with the txns it dispatched, and has
`lockmgr_model_replay` replay the identical operation sequence on the C++
lock manager, which must dispatch the same set of txns at every step.

Usage: model_diff.py --model PATH/lock_models.py --replay PATH/lockmgr_model_replay [--workloads N]
Exits 77 (skipped) when the model file is absent.
"""
import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile


def load_model(path):
    spec = importlib.util.spec_from_file_location("lock_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def trace(lm, txns, rng):
    """The model's randomized harness (lock_models.run), recording each op."""
    pending = list(txns)
    running, done, ops = [], set(), []
    ids = lambda ts: sorted(t.id for t in ts)
    steps = 0
    while len(done) < len(txns):
        steps += 1
        assert steps < 100000, "model made no progress"
        lm.input_exhausted = not pending
        r = lm.poll()
        ops.append(("poll", int(not pending), ids(r)))
        running += r
        can_admit = bool(pending) and lm.can_admit()
        if can_admit and (not running or rng.random() < 0.5):
            t = pending.pop(0)
            r = lm.admit(t)
            ops.append(("admit", t.id, ids(r)))
            running += r
            continue
        if not running:
            continue  # the next iteration polls again (the model does the same)
        t = running.pop(rng.randrange(len(running)))
        done.add(t.id)
        r = lm.complete(t)
        ops.append(("done", t.id, ids(r)))
        running += r
    return ops


def configs(m):
    # (name for the C++ factory, threshold, sca_first_hit, sca_when_idle, model factory)
    yield ("det2pl", 0, 0, 0, lambda: m.Calvin())
    yield ("dclp", 0, 0, 0, lambda: m.DCLP())
    yield ("dclp_frag", 0, 0, 0, lambda: m.Frag())
    for th in (1, 2, 3):
        yield ("vll", th, 0, 0, lambda th=th: m.VLL(th))
        yield ("vll_sca", th, 0, 0, lambda th=th: m.VLL(th, "all"))
        yield ("vll_sca", th, 1, 0, lambda th=th: m.VLL(th, "first"))
        yield ("vll_sca", th, 0, 1, lambda th=th: m.VLL(th, "all", sca_when_idle=True))
        yield ("vll_sca", th, 1, 1, lambda th=th: m.VLL(th, "first", sca_when_idle=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--replay", required=True)
    ap.add_argument("--workloads", type=int, default=int(os.environ.get("DETDB_MODEL_DIFF_WORKLOADS", "150")))
    ap.add_argument("--seed", type=int, default=20261121)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print("model_diff: %s not found; skipped" % args.model)
        return 77
    m = load_model(args.model)
    rng = random.Random(args.seed)
    lines = []
    n_traces = 0
    for it in range(args.workloads):
        n_keys = rng.randint(3, 10)
        spec = []
        for i in range(1, rng.randint(20, 60) + 1):
            rs = set(rng.sample(range(n_keys), rng.randint(0, 3)))
            ws = set(rng.sample(range(n_keys), rng.randint(0, 2)))
            if not rs and not ws:
                ws = {rng.choice(range(n_keys))}
            spec.append((i, sorted(rs), sorted(ws)))
        order_seed = rng.random()
        for name, th, first, idle, make in configs(m):
            txns = [m.Txn(i, rs, ws) for (i, rs, ws) in spec]
            ops = trace(make(), txns, random.Random(order_seed))
            lines.append("workload %s %d %d %d seed=%d" % (name, th, first, idle, it))
            for (i, rs, ws) in spec:
                lines.append("txn %d r %s w %s" % (i, " ".join(map(str, rs)), " ".join(map(str, ws))))
            for op, arg, out in ops:
                lines.append("op %s %d -> %s" % (op, arg, " ".join(map(str, out))))
            lines.append("end")
            n_traces += 1
    with tempfile.NamedTemporaryFile("w", suffix=".trace", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        res = subprocess.run([args.replay, path])
    finally:
        os.unlink(path)
    print("model_diff: %d traces from %d workloads: %s" %
          (n_traces, args.workloads, "match" if res.returncode == 0 else "MISMATCH"))
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
