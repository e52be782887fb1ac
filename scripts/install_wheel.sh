#!/usr/bin/env bash
# Builds and installs this tree's wheel (chord_kernels, which the tests, the bench and the lab
# scripts import) into python3, offline: --no-build-isolation --no-deps, so torch, nanobind
# and scikit-build-core must already be installed. CMake finds a carried .deps prefix through
# CMAKE_PREFIX_PATH; the build directory (build-py/) is kept, so a rebuild is incremental.
# Usage: scripts/install_wheel.sh [LOG]   (default /tmp/chord-pip-install.log; its tail on failure)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
log=${1:-/tmp/chord-pip-install.log}
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
if [ -d .deps/usr ]; then
  export CMAKE_PREFIX_PATH="$PWD/.deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
python3 -m pip install --no-build-isolation --no-deps -v . > "$log" 2>&1 || { tail -40 "$log"; exit 1; }
