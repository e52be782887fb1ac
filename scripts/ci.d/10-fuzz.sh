#!/usr/bin/env bash
# CI step: build the libFuzzer target (fuzz/) with clang and ASan, run it for a bounded
# time from a seed corpus (the tuning tables, env seeds, and real cubins of every kernel
# family compiled now with the chord CLI, as cubins, as cache entries and with each crafted
# damage of tests/crafted_elf.hpp), print the run count and how much of the cubin reader
# the run covered, and fail on any crash, sanitizer report or oracle failure, or when the
# run never reached the reader's symbol or .nv.info parsing.
# CHORD_FUZZ_SECONDS (default 90) bounds the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${CHORD_FUZZ_SECONDS:-90}

cxx=""
for c in clang++ clang++-14; do command -v "$c" >/dev/null 2>&1 && { cxx=$c; break; }; done
rt_ok() { [ -n "$cxx" ] && echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' |
  "$cxx" -x c++ -fsanitize=fuzzer,address -o /dev/null - >/dev/null 2>&1; }
if ! rt_ok; then
  echo "fuzz: clang++ cannot link libFuzzer with ASan here: installing clang-14 and its runtime"
  scripts/apt-install.sh clang-14 libclang-rt-14-dev
  cxx=clang++-14
  rt_ok || { echo "fuzz: $cxx cannot link -fsanitize=fuzzer,address" >&2; exit 1; }
fi
cc=${cxx/clang++/clang}

cuda_home=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda_home/bin:$PATH"
prefix_args=()
if [ -d .deps/usr ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
  export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
CC=$cc CXX=$cxx cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCHORD_FUZZ=ON \
  -DCHORD_BUILD_TESTS=OFF -DCUDAToolkit_ROOT="$cuda_home" "${prefix_args[@]}" >/dev/null
cmake --build build-fuzz --target chord_fuzz_validation chord_fuzz_seeds -j "$(nproc)"
# The CLI of the main build (scripts/test.sh ran before this step), else one built here.
cli=build/chord
if [ ! -x "$cli" ]; then
  cmake --build build-fuzz --target chord_cli -j "$(nproc)"
  cli=build-fuzz/chord
fi

work=$(mktemp -d /tmp/chord-fuzz-ci-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/seeds"
# The last byte of an input picks the target (fuzz/fuzz_targets.hpp): 8 env, 9 tuning-table
# JSON, 10 cache entry, 11 cubin.
i=0
for table in tuning_tables/*.json; do
  i=$((i + 1)); { cat "$table"; printf '\x09'; } > "$work/seeds/table$i"
done
printf 'relative/dir\x00\x08' > "$work/seeds/env"
printf 'CHORDCB1\x05\x00\x00\x00\x00\x00\x00\x00cubin\x0a' > "$work/seeds/cache"
# Every kernel family: the dequant kernel set (INT4 dequant) and qwen3 (the GEMM in its three
# engines, INT4 and NF4; W4A16 pack / unpack; NF4 pack / dequant; the routing check), plus
# the dequant kernels of two other arches (other ELF flags and notes).
for spec in "sm_90a dequant" "sm_90a qwen3" "sm_80 dequant" "sm_100a dequant"; do
  set -- $spec
  "$cli" precompile --arch "$1" --profile "$2" --out "$work/cubins" > "$work/precompile.log" 2>&1 ||
    { cat "$work/precompile.log" >&2; exit 1; }
done
build-fuzz/fuzz/chord_fuzz_seeds "$work/seeds" "$work"/cubins/kernels/*.cubin

set +e
(cd "$work" && "$OLDPWD/build-fuzz/fuzz/chord_fuzz_validation" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=4096 -print_final_stats=1 corpus seeds) > "$work/fuzz.log" 2>&1
status=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
if [ "$status" -ne 0 ]; then
  tail -60 "$work/fuzz.log" >&2
  echo "fuzz: FAILED (exit $status) after ${runs:-?} runs" >&2
  exit 1
fi
echo "fuzz: chord_fuzz_validation ran ${runs} inputs in ${seconds} s with no crash ($(grep -c . <(ls "$work/corpus")) corpus units)"
depth=$(sed -n 's/^chord fuzz: cubin inputs/cubin inputs/p' "$work/fuzz.log")
echo "fuzz: $depth"
with_registers=$(echo "$depth" | sed -n 's/.*with registers \([0-9]*\).*/\1/p')
if [ "${with_registers:-0}" -eq 0 ]; then
  echo "fuzz: FAILED: no cubin input was read through its symbols and .nv.info (the cubin seeds are missing)" >&2
  exit 1
fi
