#!/usr/bin/env bash
# Before/after on the GPU machine in one call: builds this tree (and installs its wheel, which
# the bench runs through) and a baseline tree (an export of an earlier commit, with .deps, e.g.
# `git archive <commit> | tar -x -C .clean_base`; only its build/libchord.so is used), runs the
# C++ GPU tests of this tree, then each bench subset once with this tree's bench timing both
# libraries in one process (--against: chord_kernels.load_library opens the baseline's
# libchord.so beside the package's own; rep by rep, one clock; both outputs checked). Results
# under $OUT.
# Usage: [GPU_TESTS=FILTER|none] lab/device_compare.sh BASE_DIR ONLY...   (each ONLY is a bench --only filter,
# or set:generalization / set:formats for that whole set with --against;
# a filter prefixed "env:VAR=VALUE:" runs this tree's bench with that variable set as well;
# one prefixed "against-env:VAR=VALUE:" runs the --against comparison with it set, for a
# variable only this tree's library reads, e.g. CHORD_W4A16_GROUP_SUMS=1: form 1 here
# against the base's default in one process)
set -uo pipefail
base=$1; shift
base_lib="$(cd "$base" && pwd)/build/libchord.so"
out=${OUT:-/tmp/chord-out}
mkdir -p "$out"
export CHORD_CACHE_DIR=/tmp/chord-cache
runs=$(mktemp -d /tmp/compare.XXXXXX)  # this call's bench outputs, packed into compare.tgz at the end
(cd "$base" && scripts/setup.sh > /tmp/build_base.log 2>&1) &
base_build=$!
scripts/install_wheel.sh /tmp/pip_install.log > /dev/null &
wheel_build=$!
scripts/setup.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait "$base_build" || { echo "baseline build failed:"; tail -30 /tmp/build_base.log; exit 1; }
wait "$wheel_build" || { echo "wheel build failed:"; tail -30 /tmp/pip_install.log; exit 1; }
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
# GPU_TESTS: a Catch filter for the C++ GPU tests (default: all of them, several minutes),
# or "none" to skip them when the device time is short.
if [[ ${GPU_TESTS:-} != none ]]; then
  build/tests/chord_gpu_tests ${GPU_TESTS:+"$GPU_TESTS"} > "$out/gpu_tests.log" 2>&1
  grep -E "test cases|passed|failed" "$out/gpu_tests.log" | tail -3
fi
for only in "$@"; do
  tag=$(echo "$only" | tr -c 'A-Za-z0-9=\n' '_')
  if [[ $only == set:* ]]; then
    python3 bench/bench_w4a16.py --set "${only#set:}" --against "$base_lib" --out "$runs/a_$tag" > "$runs/a_$tag.txt" 2>&1
    echo "== after vs before ($base), --set ${only#set:}"
    grep -E "^--against \(|failed checks|Error" "$runs/a_$tag.txt"
    sed -n '/^--against: its time/,$p' "$runs/a_$tag.txt"
    continue
  fi
  if [[ $only == against-env:* ]]; then
    spec=${only#against-env:}; var=${spec%%:*}; filt=${spec#*:}
    env "$var" python3 bench/bench_w4a16.py --only "$filt" --against "$base_lib" --out "$runs/a_$tag" \
      > "$runs/a_$tag.txt" 2>&1
    echo "== after ($var) vs before ($base), $filt"; grep -E "us |failed|Error" "$runs/a_$tag.txt" | sed 's/  */ /g'
    continue
  fi
  if [[ $only == env:* ]]; then
    spec=${only#env:}; var=${spec%%:*}; filt=${spec#*:}
    env "$var" python3 bench/bench_w4a16.py --only "$filt" --out "$runs/b_$tag" > "$runs/b_$tag.txt" 2>&1
    echo "== after, $var, $filt"; grep -E "us " "$runs/b_$tag.txt" | sed 's/  */ /g'
    continue
  fi
  # Both builds in one process, rep by rep (one clock): against = the base's time, (N x) = base / ours.
  python3 bench/bench_w4a16.py --only "$only" --against "$base_lib" --out "$runs/a_$tag" \
    > "$runs/a_$tag.txt" 2>&1
  echo "== after vs before ($base), $only"; grep -E "us |failed|Error" "$runs/a_$tag.txt" | sed 's/  */ /g'
done > "$out/compare.txt" 2>&1
cat "$out/compare.txt"
# Every run's JSON and text in one file: the device tool brings back at most 8.
tar czf "$out/compare.tgz" -C "$runs" . || echo "packing $runs failed"
