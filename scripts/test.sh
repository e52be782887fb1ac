#!/usr/bin/env bash
# Builds (if needed) and runs every test: CPU tests everywhere; GPU tests run where a GPU
# is visible and are reported as skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -d .deps/usr ]; then export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"; fi
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
