#!/usr/bin/env bash
# Installs the build dependencies that are missing (apt where it exists, saying which;
# else the carried .deps prefix that scripts/gpu-deps.sh unpacks) and builds chord into
# build/.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs="cmake ninja-build g++ libfmt-dev nlohmann-json3-dev libxxhash-dev catch2"
if command -v apt-get >/dev/null 2>&1 && [ ! -d .deps/usr ]; then
  missing=""
  for p in $need_pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    echo "setup: missing build dependencies:$missing"
    scripts/apt-install.sh $missing
  fi
fi

# CUDA toolkit (NVRTC and cuda.h). chord needs no GPU to build or to compile kernels.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/nvrtc.h" ]; then
  echo "setup: the CUDA toolkit (13.x) was not found at $cuda_home; install it or set CUDA_HOME" >&2
  exit 1
fi
export PATH="$cuda_home/bin:$PATH"

prefix_args=()
if [ -d .deps/usr ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
  export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda_home" "${prefix_args[@]}" >/dev/null
cmake --build build -j "$(nproc)"
