#!/usr/bin/env bash
# CI step: build the libFuzzer target (fuzz/) with clang and ASan, run it for a bounded
# time from a seed corpus (the tuning tables, env and cache-entry seeds), print the run
# count, and fail on any crash, sanitizer report or oracle failure.
# CHORD_FUZZ_SECONDS (default 90) bounds the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${CHORD_FUZZ_SECONDS:-90}

cxx=""
for c in clang++ clang++-14; do command -v "$c" >/dev/null 2>&1 && { cxx=$c; break; }; done
rt_ok() { [ -n "$cxx" ] && echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' |
  "$cxx" -x c++ -fsanitize=fuzzer,address -o /dev/null - >/dev/null 2>&1; }
if ! rt_ok; then
  echo "fuzz: installing clang-14 and its runtime (libFuzzer, ASan)"
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null
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
cmake --build build-fuzz --target chord_fuzz_validation -j "$(nproc)"

work=$(mktemp -d /tmp/chord-fuzz-ci-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/seeds"
# The last byte of an input picks the target: 8 env, 9 tuning-table JSON, 10 cache entry.
i=0
for table in tuning_tables/*.json; do
  i=$((i + 1)); { cat "$table"; printf '\x09'; } > "$work/seeds/table$i"
done
printf 'relative/dir\x00\x08' > "$work/seeds/env"
printf 'CHORDCB1\x05\x00\x00\x00\x00\x00\x00\x00cubin\x0a' > "$work/seeds/cache"

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
