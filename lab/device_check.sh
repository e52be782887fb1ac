#!/usr/bin/env bash
# One device call: build, run every test (GPU included), time the JIT path; logs to $OUT.
# Run from the repo root with .deps carried:  lab/device_check.sh
set -uo pipefail
out=${OUT:-/tmp/chord-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$out/gpu.txt"
export CHORD_CACHE_DIR=/tmp/chord-cache
# A failed build must stop here: the machine keeps build/ between calls, so the tests below
# would otherwise run the previous call's binaries.
scripts/setup.sh > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
tail -5 "$out/build.log"
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
build/tests/chord_gpu_tests --durations yes 2>&1 | tee "$out/gpu_tests.log" | tail -30
CHORD_VALIDATE_ROUTING=1 build/tests/chord_gpu_tests "[routing]" 2>&1 | tee "$out/gpu_routing.log" | tail -5
ctest --test-dir build -j 8 > "$out/ctest.log" 2>&1
status=$?
tail -8 "$out/ctest.log"
build/chord_jit_timing 2>&1 | tee "$out/jit_timing.json"
build/chord info 2>&1 | tee "$out/info.txt"
exit "$status"
