#!/usr/bin/env bash
# Interleaved CURVE on/off throughput on a local 2-node cluster (docs/SECURITY.md):
# 3 rounds, each one run with CURVE and one with --insecure; prints detdb-bench JSON per run.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DETDB_BIN_DIR=build/release/deploy
D=/tmp/curve_bench_cluster
for round in 1 2 3; do
  for mode in on off; do
    extra=(); [ $mode = off ] && extra=(--insecure)
    deploy/local_cluster.sh down --dir=$D >/dev/null 2>&1
    cfg=$(deploy/local_cluster.sh up 2 --dir=$D ${extra[@]+"${extra[@]}"} -- --micro_records=100000 2>/dev/null) || { echo "up failed"; continue; }
    out=$(build/release/bench/detdb-bench micro --cluster=$cfg --multipartition=0.1 --duration=5 --warmup=1 --json 2>&1 | tail -1)
    echo "round $round curve=$mode $out"
    deploy/local_cluster.sh down --dir=$D >/dev/null 2>&1
  done
done
