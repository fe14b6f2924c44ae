#!/usr/bin/env bash
# Instructions per txn of a `detdb-bench` run, counted by callgrind: a
# figure of the CPU work a txn costs that this project's noisy VMs do not
# move (docs/TPCC.md, "Instructions per txn"). Use it to A/B a change to
# the work per txn; it says nothing of cache misses, page faults or
# hand-offs between threads, which wall-clock pairs still have to show.
#   bench/ir_per_txn.sh [BIN] [-- detdb-bench arguments]
#   bench/ir_per_txn.sh build/release -- tpcc --workers=2 --mix=no+payment
# BIN is a build directory (default build/release). Counted: the workers,
# the lock threads and the sequencer, and with `tpcc` the bench's client
# loop (`micro`'s in-process client is not counted); not loading, not the
# checks after the run, not the checkpoint or input-log threads. The
# figure is the difference of two runs (SMALL and LARGE txns, default
# 20000 and 60000) divided by their difference in txns, so what a run
# costs once (start-up, the first epochs) cancels. Under valgrind the
# threads take turns on one core, so polling loops count a little more
# than natively; the two builds of an A/B pay that alike. Prints the
# figure, the same split by thread (workers, lock threads, sequencers,
# and the client with `tpcc`), then the program's total and the 24
# functions with most instructions (self) of the larger run; RUNS=3
# repeats the pair and prints each figure; KEEP=1 keeps the callgrind
# files (for callgrind_annotate --tree=calling and the like).
set -euo pipefail
BIN=build/release
if [ $# -gt 0 ] && [ "$1" != "--" ]; then BIN="$1"; shift; fi
[ -d "$BIN" ] || { echo "ir_per_txn: no build directory $BIN" >&2; exit 2; }
BIN=$(realpath "$BIN")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(tpcc --workers=2 --mix=no+payment)
SMALL="${SMALL:-20000}"
LARGE="${LARGE:-60000}"
RUNS="${RUNS:-1}"
for v in "$SMALL" "$LARGE" "$RUNS"; do
  [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || { echo "ir_per_txn: SMALL, LARGE and RUNS must be positive integers" >&2; exit 2; }
done
[ "$LARGE" -gt "$SMALL" ] || { echo "ir_per_txn: LARGE ($LARGE) must exceed SMALL ($SMALL)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "ir_per_txn: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
OUT=$(mktemp -d /tmp/ir_per_txn.XXXXXX)
if [ "${KEEP:-0}" = 1 ]; then
  echo "ir_per_txn: keeping the callgrind files in $OUT" >&2
else
  trap 'rm -rf "$OUT"' EXIT
fi

# Instructions of one run of N txns, in the run's threads only.
count() {
  local n=$1 file=$OUT/cg.$1.$2
  valgrind --tool=callgrind --callgrind-out-file="$file" --collect-atstart=no \
    --toggle-collect='detdb::Scheduler::WorkerThread()' \
    --toggle-collect='detdb::Scheduler::LockThread()' \
    --toggle-collect='detdb::Sequencer::Run()' \
    --toggle-collect='*Driver::Run(detdb::tpcc::TpccRunResult*)' \
    "$BIN/bench/detdb-bench" "${ARGS[@]}" --txns="$n" >"$OUT/log.$1.$2" 2>&1 ||
    { cat "$OUT/log.$1.$2" >&2; exit 1; }
  local ir
  ir=$(awk '/^summary:/ {print $2}' "$file")
  # No count (or none at all) means the toggles never fired: a thread
  # function renamed, or a run that did nothing. Say so, never print 0.
  [[ $ir =~ ^[0-9]+$ && $ir -gt 0 ]] || { echo "ir_per_txn: no instructions counted in the run's threads ($file)" >&2; exit 1; }
  echo "$ir"
}

for r in $(seq 1 "$RUNS"); do
  small=$(count "$SMALL" "$r")
  large=$(count "$LARGE" "$r")
  echo "run $r: $small instructions for $SMALL txns, $large for $LARGE: $(( (large - small) / (LARGE - SMALL) )) instructions per txn"
done
# Per thread: each toggled function's inclusive count, the same difference
# of the last pair (the client only with `tpcc`).
# (Run where no source is found: from the source tree, callgrind_annotate
# files inlined code under other file:function pairs, and the thread
# functions' inclusive counts come out a few per cent short.)
inclusive() {  # FILE PATTERN: the largest inclusive count of a line naming PATTERN
  (cd "$OUT" && callgrind_annotate --inclusive=yes "$1") >"$OUT/incl" 2>/dev/null
  awk -v pat="$2" 'index($0, pat) {gsub(",", "", $1); if ($1 + 0 > best) best = $1 + 0} END {print best + 0}' "$OUT/incl"
}
line="per thread, instructions per txn (last run):"
attributed=0
for part in "workers|:detdb::Scheduler::WorkerThread() [" "lock threads|:detdb::Scheduler::LockThread() [" \
            "sequencers|:detdb::Sequencer::Run() [" "client|Driver::Run(detdb::tpcc::TpccRunResult*) ["; do
  name=${part%%|*}
  pat=${part#*|}
  a=$(inclusive "$OUT/cg.$SMALL.$RUNS" "$pat")
  b=$(inclusive "$OUT/cg.$LARGE.$RUNS" "$pat")
  if [ "$b" -gt 0 ]; then
    line="$line $name $(( (b - a) / (LARGE - SMALL) )),"
    attributed=$(( attributed + b - a ))
  fi
done
# What no thread function's inclusive count holds: 0 when the four
# account for every counted instruction, as they should; printed, never
# hidden, so that a thread function renamed or an annotation that
# misfiles costs shows (bench/ir_per_txn_test.sh allows 2%).
line="$line not attributed $(( (large - small - attributed) / (LARGE - SMALL) ))"
echo "$line"
echo "largest functions (self) of the last $LARGE-txn run:"
# (Through a file: a reader that stops early would end the pipeline with
# SIGPIPE, which pipefail turns into a failure.)
callgrind_annotate "$OUT/cg.$LARGE.$RUNS" >"$OUT/annotated" 2>/dev/null
awk '/^-+$/ {n++} n >= 3 && /\(/ && shown < 25 {print substr($0, 1, 160); shown++}' "$OUT/annotated"
