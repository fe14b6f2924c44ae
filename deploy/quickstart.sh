#!/usr/bin/env bash
# The main command of README.md: installs dependencies, builds a release and
# runs a local deterministic database on the DCLP microbenchmark under every
# lock manager in turn (about 20 seconds), printing live progress and a
# comparison table. Extra flags go to detdb-bench, e.g. --contention=0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
exec build/release/bench/detdb-bench micro --compare "$@"
