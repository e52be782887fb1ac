#!/usr/bin/env bash
# Downloads the Hugging Face `kernels` package and its dependencies as wheels for the GPU
# machine (CPython 3.12, x86_64 Linux, no network there), so that scripts/test_python_gpu.sh
# can install them offline and run the GPU test of the `kernels` build layout
# (test_nf4_through_hf_kernels). About 23 MB; carry the folder with the tree.
# Usage: scripts/gpu-wheels.sh [dest] [python-version]   (default .wheels 3.12; git-ignored)
set -euo pipefail
dest=${1:-.wheels}
pyver=${2:-3.12}
mkdir -p "$dest"
python3 -m pip download kernels -d "$dest" --only-binary=:all: --implementation cp --python-version "$pyver" \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 >/dev/null
echo "wheels in $dest: $(ls "$dest" | wc -l) files, $(du -sh "$dest" | cut -f1)"
