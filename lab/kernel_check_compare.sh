#!/usr/bin/env bash
# Kernel-level before/after on the GPU machine in one call: builds lab/kernel_check's WGMMA
# checker from a baseline tree (an export of an earlier commit, e.g. `git archive <commit> |
# tar -x -C .clean_base`) and from this tree side by side, fails on a serialized wgmma (C75xx)
# in either build, runs this tree's correctness pass, then the timing pass alternating base /
# this tree ROUNDS times (the same binary varies 1-3% between calls: compare within a call).
# Results under $OUT; the table on stdout holds the rows matching FILTER (a grep -E pattern).
# Usage: lab/kernel_check_compare.sh BASE_DIR [FILTER] [ROUNDS] [TIMING_FLAGS...]
#   e.g. lab/kernel_check_compare.sh .clean_base "wgmma_ws" 2 --quick --timing-only
set -uo pipefail
base=$1
filter=${2:-wgmma_ws}
rounds=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--quick --timing-only)
out=${OUT:-/tmp/chord-out}
mkdir -p "$out"
build() {
  nvcc -std=c++17 -O3 -I. -gencode=arch=compute_90a,code=sm_90a -Xptxas -v \
    lab/kernel_check/w4a16_wgmma_check.cu reference/*.cpp -o "$1"
}
(cd "$base" && build /tmp/kcc_base > "$out/build_base.log" 2>&1) &
base_build=$!
build /tmp/kcc_new > "$out/build_new.log" 2>&1 || { tail -20 "$out/build_new.log"; exit 1; }
wait "$base_build" || { tail -20 "$out/build_base.log"; exit 1; }
if grep -q "C75" "$out/build_base.log" "$out/build_new.log"; then
  echo "serialized wgmma:"; grep -h "C75" "$out/build_base.log" "$out/build_new.log" | cut -c1-200
  exit 1
fi
/tmp/kcc_new --no-timing > "$out/check_new.log" 2>&1
status=$?
echo "correctness (this tree): $(tail -1 "$out/check_new.log") rc=$status"
for r in $(seq 1 "$rounds"); do
  for t in base new; do
    /tmp/kcc_$t "${flags[@]}" > "$out/time_${t}_$r.log" 2>&1
    echo "== $t, round $r"
    grep -E "^TIME" "$out/time_${t}_$r.log" | grep -E "$filter" | sed 's/  */ /g; s/^TIME //; s/ TFLOP.*//'
  done
done
exit $status
