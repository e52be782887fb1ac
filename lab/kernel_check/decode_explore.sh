#!/usr/bin/env bash
# One GPU run of lab/kernel_check/decode_explore.py: installs this tree's wheel, then times every
# decode call of the generalization set and the suite under a grid of forced mma.sync configs.
# Usage: lab/kernel_check/decode_explore.sh [GRID] [BUDGET_S] [REPS] [MIN_FLOOR_US]  (default medium 190 10 0)
# Writes $OUT/decode_explore.json (and install/run logs); analyse it on a CPU with
# lab/kernel_check/decode_explore_report.py.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/chord-out}
mkdir -p "$OUT"
start=$(date +%s)
scripts/install_wheel.sh "$OUT/pip-install.log" || exit 1
echo "wheel installed in $(( $(date +%s) - start )) s"
python3 lab/kernel_check/decode_explore.py --out "$OUT" --grid "${1:-medium}" --budget-s "${2:-190}" \
  --reps "${3:-10}" --min-floor-us "${4:-0}" 2>&1 | tee "$OUT/decode_explore.log"
rc=${PIPESTATUS[0]}
cp /tmp/decode_explore/prewarm0.log "$OUT/" 2>/dev/null
python3 lab/kernel_check/decode_explore_report.py "$OUT/decode_explore.json" --rows 30 > "$OUT/decode_explore_report.txt" 2>&1
tail -60 "$OUT/decode_explore_report.txt"
echo "total $(( $(date +%s) - start )) s, rc $rc"
exit $rc
