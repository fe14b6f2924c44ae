#!/usr/bin/env bash
# The test command of README.md: installs dependencies, builds a preset and
# runs every CTest test of it.
#   deploy/test.sh            # release build
#   deploy/test.sh asan       # debug + AddressSanitizer + UndefinedBehaviorSanitizer
#   deploy/test.sh tsan       # ThreadSanitizer
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
deploy/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
