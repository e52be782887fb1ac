#!/usr/bin/env bash
# Prepares bitsandbytes for the GPU machine (no network there), so that the GPU tests compare
# chord's NF4 quantizer and reader with bitsandbytes' CUDA kernels
# (tests/python/test_gpu.py, test_nf4_*_bitsandbytes*). Downloads the bitsandbytes wheel that
# CI's CPU contract test uses and unpacks into a git-ignored folder only what an H200 with
# CUDA 13.0 loads: the Python package, its CPU library and its CUDA 13.0 library (about 5 MB
# of the wheel's 43 MB, under the 64 MiB carry). The wheel must have the pinned SHA-256: its
# libraries are loaded into the GPU tests' process.
#
# On the GPU machine, carry the folder and put it on the path of the GPU tests:
#   PYTHONPATH=$PWD/.bnb-site python3 -m pytest tests/python/test_gpu.py -k bitsandbytes
# Usage: scripts/reference-bnb.sh [dest]   (default .bnb-site)
set -euo pipefail
dest=${1:-.bnb-site}
version=0.50.2
sha256=55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283  # bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl
cuda=130  # the GPU machine's CUDA 13.0; bitsandbytes picks its library by torch.version.cuda
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_24_x86_64 \
  --python-version 3.12 -d "$scratch" "bitsandbytes==$version"
wheel=$(ls "$scratch"/bitsandbytes-*.whl)
if [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$sha256" ]; then
  echo "reference-bnb: $(basename "$wheel") does not have the pinned SHA-256 $sha256; not unpacking it" >&2
  exit 1
fi
rm -rf "$dest" && mkdir -p "$dest"
python3 - "$wheel" "$dest" "$cuda" <<'PY'
import sys, zipfile
wheel, dest, cuda = sys.argv[1:]
keep_libs = {"libbitsandbytes_cpu.so", f"libbitsandbytes_cuda{cuda}.so"}
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if not n.endswith(".so") or n.rsplit("/", 1)[-1] in keep_libs]
    missing = keep_libs - {n.rsplit("/", 1)[-1] for n in names}
    if missing:
        sys.exit(f"reference-bnb: the wheel has no {sorted(missing)}")
    z.extractall(dest, names)
PY
echo "bitsandbytes $version in $dest: $(du -sh "$dest" | cut -f1)"
