#!/usr/bin/env bash
# CURVE on against off on a local 2-node cluster (docs/SECURITY.md), interleaved:
#   bench/curve_overhead.sh [ROUNDS] [SECONDS]      (default 5 rounds of 5 s)
# Each round starts one cluster with CURVE and one with --insecure (the order
# alternates between rounds, so drift in the machine's load hits both
# alike), runs `detdb-bench micro --cluster` against it, and prints one line
# per run: throughput, and the nodes' CPU time per answered txn (user + sys
# of both detdb processes over the run, divided by the txns they answered,
# from `detdb-ctl info`). Then the medians and the on/off ratios.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${1:-5}"
SECONDS_PER_RUN="${2:-5}"
BIN=build/release
export DETDB_BIN_DIR=$BIN/deploy
D=/tmp/curve_bench_cluster
TICKS=$(getconf CLK_TCK)

# user + sys clock ticks of the cluster's detdb processes.
cpu_ticks() {
  local total=0 pid
  for f in "$D"/node*.pid; do
    pid=$(cat "$f")
    [ -r "/proc/$pid/stat" ] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "$total"
}

# Txns answered by every node (detdb-ctl info's replied), summed.
replied() {
  "$BIN/deploy/detdb-ctl" --config="$1" info 2>/dev/null |
    awk '/ replied /{for (i = 1; i < NF; i++) if ($i == "replied") s += $(i + 1)} END {print s + 0}'
}

results=()
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then modes="on off"; else modes="off on"; fi
  for mode in $modes; do
    extra=()
    [ "$mode" = off ] && extra=(--insecure)
    deploy/local_cluster.sh down --dir=$D >/dev/null 2>&1
    cfg=$(deploy/local_cluster.sh up 2 --dir=$D ${extra[@]+"${extra[@]}"} -- --micro_records=100000 2>/dev/null) ||
      { echo "round $round curve=$mode: up failed"; continue; }
    t0=$(cpu_ticks); r0=$(replied "$cfg")
    out=$($BIN/bench/detdb-bench micro --cluster="$cfg" --multipartition=0.1 --duration="$SECONDS_PER_RUN" \
          --warmup=1 --json 2>/dev/null | tail -1)
    t1=$(cpu_ticks); r1=$(replied "$cfg")
    deploy/local_cluster.sh down --dir=$D >/dev/null 2>&1
    tps=$(sed -n 's/.*"txns_per_sec":\([0-9.]*\).*/\1/p' <<<"$out")
    [ -n "$tps" ] || { echo "round $round curve=$mode: no result: $out"; continue; }
    cpu_us=$(awk -v t=$((t1 - t0)) -v n=$((r1 - r0)) -v hz="$TICKS" 'BEGIN {printf "%.2f", (n > 0 ? t / hz * 1e6 / n : 0)}')
    echo "round $round curve=$mode txns_per_sec=$tps node_cpu_us_per_txn=$cpu_us answered=$((r1 - r0))"
    results+=("$mode $tps $cpu_us")
  done
done

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
on_tps=$(printf '%s\n' "${results[@]}" | awk '$1 == "on" {print $2}' | median)
off_tps=$(printf '%s\n' "${results[@]}" | awk '$1 == "off" {print $2}' | median)
on_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "on" {print $3}' | median)
off_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "off" {print $3}' | median)
awk -v a="$on_tps" -v b="$off_tps" -v c="$on_cpu" -v d="$off_cpu" 'BEGIN {
  printf "median txns/s: CURVE on %.0f, off %.0f, ratio on/off %.2f\n", a, b, (b > 0 ? a / b : 0)
  printf "median node CPU us per txn: CURVE on %.2f, off %.2f, ratio on/off %.2f\n", c, d, (d > 0 ? c / d : 0)
}'
