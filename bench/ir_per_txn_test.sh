#!/usr/bin/env bash
# bench/ir_per_txn.sh end to end on a small TPC-C run: it must finish, print
# a plausible count per txn (a New-Order + Payment txn is tens of thousands
# of instructions) and the function table, and fail loudly on a bad run.
#   bench/ir_per_txn_test.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD="$1"
command -v valgrind >/dev/null || { echo "SKIP: no valgrind (deploy/install-deps.sh installs it)"; exit 77; }
out=$(SMALL=1000 LARGE=3000 bench/ir_per_txn.sh "$BUILD" -- tpcc --workers=1 --warehouses=1 --tpcc_small --mix=no+payment 2>&1)
rc=$?
head -9 <<<"$out"
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
n=$(echo "$out" | sed -n 's/.*: \([0-9][0-9]*\) instructions per txn$/\1/p')
[ -n "$n" ] || { echo "FAIL: no 'instructions per txn' line"; exit 1; }
{ [ "$n" -gt 5000 ] && [ "$n" -lt 500000 ]; } || { echo "FAIL: $n instructions per txn is implausible"; exit 1; }
grep -q "PROGRAM TOTALS" <<<"$out" || { echo "FAIL: no function table"; exit 1; }
# The split by thread: every thread of a tpcc run, adding up to the total.
split=$(grep "^per thread, instructions per txn" <<<"$out")
[ -n "$split" ] || { echo "FAIL: no per-thread line"; exit 1; }
for part in workers "lock threads" sequencers client; do
  v=$(sed -n "s/.* $part \([0-9][0-9]*\),.*/\1/p" <<<"$split")
  [ -n "$v" ] && [ "$v" -gt 0 ] || { echo "FAIL: no $part count in: $split"; exit 1; }
done
rest=$(sed -n 's/.*not attributed \(-\{0,1\}[0-9][0-9]*\)$/\1/p' <<<"$split")
[ -n "$rest" ] && [ "${rest#-}" -le $(( n / 50 )) ] || { echo "FAIL: more than 2% not attributed: $split"; exit 1; }
# A run that fails (an unknown flag) must fail the script, not print a count.
if SMALL=10 LARGE=20 bench/ir_per_txn.sh "$BUILD" -- tpcc --no_such_flag >/dev/null 2>&1; then
  echo "FAIL: a failing run was not reported"; exit 1
fi
# Bad counts are refused before anything runs.
if LARGE=10 SMALL=10 bench/ir_per_txn.sh "$BUILD" >/dev/null 2>&1; then
  echo "FAIL: LARGE == SMALL was accepted"; exit 1
fi
echo "PASS: $n instructions per txn"
