#!/usr/bin/env bash
# The main command of README.md: installs dependencies, builds a release and
# compares every lock manager on the DCLP microbenchmark at low and high
# contention (about 20 seconds on a laptop). Extra flags go to the benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
bench=build/release/bench/detdb_lockbench
for contention in 0.0001 0.1; do
  echo
  echo "== contention index ${contention} =="
  "$bench" --lock_manager=all --contention="$contention" --txns=1000000 "$@"
done
