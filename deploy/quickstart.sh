#!/usr/bin/env bash
# The main command of README.md: installs dependencies, builds a release and
# runs a local deterministic database on the DCLP microbenchmark under every
# lock manager in turn, three rounds interleaved (about 30 seconds), printing
# live progress and a comparison table of each manager's median round.
# Extra flags go to detdb-bench and override these, e.g. --contention=0.1
# or --rounds=1 --duration=3.
#
# Why three interleaved rounds and not one run each: a shared VM's speed
# changes between runs (on the 2-vCPU test machines by up to 1.5x within a
# minute), more than most ratios between lock managers; one run each made
# the table's order a coin toss. Medians of interleaved rounds see every
# manager in both speeds (docs/ENGINE.md, "The section-4 workloads
# interleaved").
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
exec build/release/bench/detdb-bench micro --compare --rounds=3 --duration=1.5 "$@"
