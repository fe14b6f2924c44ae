#!/usr/bin/env bash
# The test command of README.md: installs dependencies, builds a preset and
# runs every CTest test of it.
#   deploy/test.sh            # release build
#   deploy/test.sh asan       # debug + AddressSanitizer + UndefinedBehaviorSanitizer
#   deploy/test.sh tsan       # ThreadSanitizer
#   deploy/test.sh fuzz       # clang: builds only the libFuzzer targets (fuzz_all)
#                             # and runs each ~25 s on a copy of its seed corpus
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
if [ "$preset" = "fuzz" ]; then
  deploy/install-deps.sh fuzz
else
  deploy/install-deps.sh
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
