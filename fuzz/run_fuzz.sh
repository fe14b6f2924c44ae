#!/bin/sh
# Runs one libFuzzer target for a bounded time on a copy of its seed corpus
# (the fuzzer adds what it finds to the copy, never to the repo's corpus).
#   run_fuzz.sh FUZZER CORPUS_DIR WORK_DIR SECONDS
# A crash leaves crash-*/leak-*/timeout-* files in WORK_DIR and fails the test.
set -eu
fuzzer="$1"; corpus="$2"; work="$3"; seconds="$4"
rm -rf "$work"
mkdir -p "$work/corpus"
cp -r "$corpus"/. "$work/corpus/"
cd "$work"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 corpus
