#!/usr/bin/env bash
# The cluster speed report of docs/CLUSTER.md: for every lock manager, a
# local cluster of N nodes (1 partition each) on loopback, the micro
# benchmark at contention 0.0001 and 0.1 with 0%, 10%, 50% and 100%
# multi-partition txns, beside the in-process figure for the same number of
# lock threads and workers and the same workload (ratio = cluster /
# in-process). Prints one JSON line per run on stdout, a table on stderr.
#
#   bench/cluster_sweep.sh [--nodes=2] [--duration=3] [--lock_managers=dclp,det2pl,...]
#                          [--multipartition=0,0.1,0.5,1] [--contention=0.0001,0.1]
#                          [-- detdb-bench flags, e.g. --outstanding=1000]
# Environment: DETDB_EPOCH_US (default 1000) is the cluster's epoch.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODES=2
DURATION=3
LMS="dclp,det2pl,vll,vll_sca,dclp_frag"
MPS="0,0.1,0.5,1"
CIS="0.0001,0.1"
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes=*) NODES="${1#*=}" ;;
    --duration=*) DURATION="${1#*=}" ;;
    --lock_managers=*) LMS="${1#*=}" ;;
    --multipartition=*) MPS="${1#*=}" ;;
    --contention=*) CIS="${1#*=}" ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "cluster_sweep: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BENCH="$ROOT/build/release/bench/detdb-bench"
[[ -x "$BENCH" ]] || { echo "cluster_sweep: build first (cmake --preset release && cmake --build --preset release)" >&2; exit 1; }
DIR="$(mktemp -d /tmp/detdb-sweep-XXXXXX)"
trap '"$ROOT/deploy/local_cluster.sh" down --dir="$DIR" >/dev/null 2>&1 || true' EXIT
IFS=, read -r -a lms <<<"$LMS"
IFS=, read -r -a mps <<<"$MPS"
IFS=, read -r -a cis <<<"$CIS"
printf '%-10s %-10s %-6s %10s %9s %9s %11s %11s %12s %7s\n' lock_mgr contention multi txns/s p50_us p99_us single_p99 multi_p99 in-process ratio >&2
declare -A ref
for lm in "${lms[@]}"; do
  # The in-process engine with the same threads (NODES partitions, 1 lock
  # thread + 1 worker each, same multi-partition share), run before the
  # cluster starts so that idle nodes do not share its cores.
  for ci in "${cis[@]}"; do
    for mp in "${mps[@]}"; do
      ref["$ci/$mp"]=$("$BENCH" micro --json --lock_manager="$lm" --partitions="$NODES" --contention="$ci" \
        --multipartition="$mp" --duration="$DURATION" --warmup=0 "${EXTRA[@]}" 2>/dev/null |
        sed -n 's/.*"txns_per_sec":\([0-9]*\).*/\1/p')
    done
  done
  cfg=$("$ROOT/deploy/local_cluster.sh" up "$NODES" --dir="$DIR" -- --lock_manager="$lm" 2>/dev/null)
  for ci in "${cis[@]}"; do
    for mp in "${mps[@]}"; do
      line=$("$BENCH" micro --cluster="$cfg" --json --contention="$ci" --multipartition="$mp" \
             --duration="$DURATION" "${EXTRA[@]}" 2>/dev/null || echo '{}')
      r="${ref[$ci/$mp]:-0}"
      echo "${line%\}},\"in_process_txns_per_sec\":${r}}"
      get() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$line"; }
      tps="$(get txns_per_sec)"
      ratio=$(awk -v a="${tps:-0}" -v b="$r" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')
      printf '%-10s %-10s %-6s %10s %9s %9s %11s %11s %12s %7s\n' "$lm" "$ci" "$mp" "$tps" \
        "$(get p50_us)" "$(get p99_us)" "$(get single_p99_us)" "$(get multi_p99_us)" "$r" "$ratio" >&2
    done
  done
  "$ROOT/deploy/local_cluster.sh" down --dir="$DIR" >/dev/null 2>&1
done
