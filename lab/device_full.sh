#!/usr/bin/env bash
# Everything the GPU machine should show, in one call (results under $OUT, 8 files):
# C++ GPU tests, routing validation, the full bench (docs/shapes.md), the GPU tests with the
# portable family forced, a quick bench of the portable family and the Python GPU suite
# (most important first, in case the call runs out of time).
# Run from the repo root with .deps present:  lab/device_full.sh
set -uo pipefail
out=${OUT:-/tmp/chord-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}" CHORD_CACHE_DIR=/tmp/chord-cache
scripts/setup.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  build/tests/chord_gpu_tests --durations yes
  CHORD_VALIDATE_ROUTING=1 build/tests/chord_gpu_tests "[routing]"
  build/chord_jit_timing
} > "$out/gpu_tests.log" 2>&1
grep -E "test cases|passed|failed|FAILED|cold_compile" "$out/gpu_tests.log" | tail -6
# The bench runs through chord_kernels: this tree's wheel (scripts/test_python_gpu.sh below
# reinstalls it from the same build directory).
scripts/install_wheel.sh /tmp/pip_install.log || exit 1
PYTHONUNBUFFERED=1 python3 bench/bench_w4a16.py --out "$out" > "$out/bench.txt" 2>&1
tail -2 "$out/bench.txt"
if [ -z "${CHORD_SKIP_PORTABLE:-}" ]; then  # set it to save device time when the portable family is unchanged
  CHORD_W4A16_ENGINE=portable build/tests/chord_gpu_tests > "$out/gpu_tests_portable.log" 2>&1
  echo "portable: $(grep -E 'test cases|All tests passed' "$out/gpu_tests_portable.log" | tail -1)"
  # Fresh folders: a warm machine keeps /tmp, and a failed run must not report the last call's files.
  portable=$(mktemp -d /tmp/portable.XXXXXX)
  CHORD_W4A16_ENGINE=portable python3 bench/bench_w4a16.py --quick --out "$portable" > /dev/null 2>&1
  cp "$portable/bench.json" "$out/bench_portable.json" 2>/dev/null || echo "portable bench failed"
fi
py_out=$(mktemp -d /tmp/py.XXXXXX)
OUT=$py_out timeout 240 scripts/test_python_gpu.sh > "$py_out.txt" 2>&1
cp "$py_out/pytest.log" "$out/pytest.log" 2>/dev/null || cp "$py_out.txt" "$out/pytest.log"
grep -E "^=+ .*(passed|failed)|overhead" "$out/pytest.log" | tail -4
