#!/usr/bin/env bash
# Profiles the heavy rows' kernels on a GPU machine with ncu (clocks left alone): for each row set
# (lab/kernel_check/one_call.py: tp8, ep8, contig, masked; default tp8 contig), one library call per
# projection, with the speed-of-light, warp-state, scheduler, workload and source-counter
# sections and the tensor-pipe and stall metrics. Writes to $OUT: ncu_SET.txt (the sections),
# sass_SET.csv.gz (per-SASS-instruction samples, `ncu --page source --csv`) and stalls_SET.txt
# (lab/kernel_check/sass_stalls.py on it). Run from the repo root with .deps present:
#   lab/device_ncu.sh [SET ...]
set -uo pipefail
out=${OUT:-/tmp/chord-ncu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}" CHORD_CACHE_DIR=${CHORD_CACHE_DIR:-/tmp/chord-cache}
scripts/setup.sh > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
scripts/install_wheel.sh /tmp/pip_install.log || exit 1  # one_call.py runs through chord_kernels
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy
          --section SourceCounters)
metrics='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|sm__pipe_tensor_op_hmma_cycles_active\.avg\.pct_of_peak_sustained_active|lts__t_bytes\.sum\.per_second|dram__bytes_(read|write)\.sum$'
rc=0
for set in "${@:-tp8 contig}"; do
  for s in $set; do
    report="/tmp/ncu_$s"
    if ! ncu --clock-control none --nvtx --nvtx-include "prof/" "${sections[@]}" --metrics "$metrics" \
        --import-source no -f -o "$report" python3 lab/kernel_check/one_call.py "$s" > "$out/ncu_run_$s.log" 2>&1; then
      echo "ncu $s failed:"; tail -5 "$out/ncu_run_$s.log"; rc=1; continue
    fi
    ncu --import "$report.ncu-rep" --print-units base > "$out/ncu_$s.txt" 2>&1
    ncu --import "$report.ncu-rep" --page source --print-source sass --csv > "/tmp/sass_$s.csv" 2>/dev/null
    python3 lab/kernel_check/sass_stalls.py "/tmp/sass_$s.csv" --top 30 > "$out/stalls_$s.txt" || rc=1
    gzip -9c "/tmp/sass_$s.csv" > "$out/sass_$s.csv.gz"
    echo "$s: $(grep -c 'chord_entry' "$out/ncu_$s.txt") kernels profiled; $(head -2 "$out/stalls_$s.txt" | tail -1)"
  done
done
exit $rc
