#!/usr/bin/env bash
# Several candidate builds against one base in one GPU call, for when device time is short:
# builds the base's and every candidate's libchord.so (the `chord` target only, in parallel)
# and installs this tree's wheel (the bench's Python side: every tree must keep chord.h's
# API). Then, per candidate, the bench runs the candidate's library (--library) against the
# base's (--against) in one process, rep by rep: the generalization set, then the suite's rows
# that match ONLY (default: the decode rows). A tree is an export with .deps beside it:
#   git archive <ref> | tar -x -C DIR && ln -s ../.deps DIR/.deps
# Carry the base and candidate folders (about 5 MiB each) with .deps. The kernel cache keys
# hash the kernel source, so the builds never share a cached cubin.
# FORMATS=1 also runs the formats set (FP16 and zero-point variants) with --against.
# Usage: [ONLY="filter,filter"] [FORMATS=1] lab/device_candidates.sh BASE_DIR CANDIDATE_DIR...
# Results: $OUT/candidates.tgz (the device tool brings back at most 8 files) holding, per
# candidate, <candidate>-generalization.json / .txt, -formats.json / .txt and -suite-*.txt, and
# the build logs; the comparison lines are printed.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: [ONLY=...] [FORMATS=1] lab/device_candidates.sh BASE_DIR CANDIDATE_DIR..." >&2
  exit 2
fi
top=${OUT:-/tmp/chord-out}
out=$top/candidates
mkdir -p "$out"
trap 'tar czf "$top/candidates.tgz" -C "$top" candidates && rm -rf "$out"' EXIT
export CHORD_CACHE_DIR=${CHORD_CACHE_DIR:-/tmp/chord-cache} PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
only=${ONLY:-indexed EP8 decode,masked EP8,offsets Qwen3 INT4}

build_lib() {  # DIR: configure and build its libchord.so only
  local dir=$1 deps
  deps="$(cd "$dir" && pwd)/.deps/usr"
  (cd "$dir" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps" &&
    cmake --build build --target chord -j8) > "$out/build-$(basename "$dir").log" 2>&1
}

dirs=("$@")
pids=()
for dir in "${dirs[@]}"; do
  build_lib "$dir" &
  pids+=($!)
done
scripts/install_wheel.sh "$out/pip-install.log" > /dev/null || { echo "wheel build failed"; exit 1; }
for i in "${!pids[@]}"; do
  dir=${dirs[$i]}
  wait "${pids[$i]}" || { echo "build of $dir failed:"; tail -20 "$out/build-$(basename "$dir").log"; exit 1; }
done

run_set() {  # NAME LIB SET: bench --set SET of LIB against the base into $out/NAME-SET.{txt,json}
  local scratch=/tmp/cand-$1-$3
  rm -rf "$scratch"
  python3 bench/bench_w4a16.py --set "$3" --library "$2" --against "$base_lib" --out "$scratch" \
    > "$out/$1-$3.txt" 2>&1
  cp "$scratch/$3.json" "$out/$1-$3.json" 2>/dev/null
}

base_lib="$(cd "$1" && pwd)/build/libchord.so"
shift
for dir in "$@"; do
  name=$(basename "$dir")
  lib="$(cd "$dir" && pwd)/build/libchord.so"
  run_set "$name" "$lib" generalization
  echo "== $name against the base, generalization set"
  grep -E "^--against|failed checks" "$out/$name-generalization.txt"
  if [[ ${FORMATS:-} == 1 ]]; then
    run_set "$name" "$lib" formats
    echo "== $name against the base, formats set (its time / ours per variant)"
    grep -E "Traceback|Error" "$out/$name-formats.txt"
    sed -n '/^--against/,$p' "$out/$name-formats.txt"
  fi
  IFS=, read -ra filters <<< "$only"
  for filt in "${filters[@]}"; do
    tag=$(echo "$filt" | tr -c 'A-Za-z0-9\n' '_')
    python3 bench/bench_w4a16.py --only "$filt" --library "$lib" --against "$base_lib" --out "/tmp/cand-$name-$tag" \
      > "$out/$name-suite-$tag.txt" 2>&1
    echo "== $name against the base, $filt (against / ours per row)"
    grep -oE "^[a-zA-Z0-9 ]+ [0-9]+ (gate_up|down)|\([0-9.]+x\)|failed" "$out/$name-suite-$tag.txt" | paste -sd' '
  done
done
