#!/usr/bin/env bash
# Installs every Debian 12 package detdb needs to build, test and benchmark.
# Idempotent: packages already present are left alone. `install-deps.sh fuzz`
# adds what the fuzz targets need. Runs as root, or via
# sudo when run by another user.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  python3-matplotlib     # detdb-bench figure: the PNGs
  libabsl-dev            # absl::Status, flat_hash_map
  libxxhash-dev          # xxHash: the state digest
  libgflags-dev libgoogle-glog-dev
  libprotobuf-dev protobuf-compiler
  libzmq3-dev cppzmq-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgoogle-perftools-dev  # tcmalloc_minimal for the programs
  libedit-dev            # detdb-cli: line editing and history (BSD licence)
  libmicrohttpd-dev      # detdb: /metrics and /healthz (docs/OPERATING.md)
  prometheus             # promtool: the /metrics tests parse the page with it; local_cluster.sh --prometheus
  bsdutils               # `script`: detdb-cli's terminal test (essential in Debian; listed for minimal images)
  valgrind               # callgrind: bench/ir_per_txn.sh, instructions per txn
)

# `install-deps.sh fuzz`: also clang and its libFuzzer / sanitizer runtimes
# (the `fuzz` preset, docs/FUZZING.md).
if [ "${1:-}" = "fuzz" ]; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
