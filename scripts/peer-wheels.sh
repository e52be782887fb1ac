#!/usr/bin/env bash
# Downloads the peer that bench/bench_w4a16.py --peers humming times (issue 29): inclusionAI's
# humming-kernels at the version vLLM 0.33 pins (humming-kernels[cu13]==0.1.19 in its METADATA),
# plus the Python packages it imports that the GPU machine (CPython 3.12, torch 2.11, triton,
# no network) lacks, as cp312 manylinux x86_64 wheels into a git-ignored folder.
#
# The [cu13] extra's CUDA toolkit wheels (nvidia-cuda-nvcc / -nvrtc / -runtime / -cccl, with
# nvvm and crt: about 190 MB at 13.5) are NOT downloaded: they exceed the 64 MiB carry, and
# Humming finds a system toolkit by itself (/usr/local/cuda, CUDA_HOME; CUDA 13.0 there). Set
# PEER_WITH_TOOLKIT=1 to add them anyway where the size does not matter.
# numpy (Humming's tuner imports it) is assumed present (matplotlib, which the bench draws
# with, needs it); PEER_WITH_NUMPY=1 adds it (16 MB).
#
# Install offline on the GPU machine, into a folder of its own (never site-packages: our wheel
# ships its own top-level `humming` facade, which the real package must not shadow):
#   python3 -m pip install --no-index --no-deps --target .peer-site .peer-wheels/*.whl
# Usage: scripts/peer-wheels.sh [dest] [python-version]   (default .peer-wheels 3.12)
set -euo pipefail
dest=${1:-.peer-wheels}
pyver=${2:-3.12}
mkdir -p "$dest"
plat=(--only-binary=:all: --implementation cp --python-version "$pyver"
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_28_x86_64)
get() { python3 -m pip download -q -d "$dest" "${plat[@]}" "$@"; }
# the package itself, without its dependencies (torch, triton, numpy are the machine's own)
get --no-deps "humming-kernels==0.1.19"
# what it imports beyond torch / triton / numpy; cuda-bindings at the machine's CUDA (13.0)
get jinja2 markupsafe safetensors tabulate tqdm filelock packaging "cuda-bindings>=13.0,<13.1"
if [ "${PEER_WITH_TOOLKIT:-0}" = 1 ]; then
  get --no-deps nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-nvcc nvidia-cuda-nvrtc nvidia-cuda-crt nvidia-nvvm
fi
if [ "${PEER_WITH_NUMPY:-0}" = 1 ]; then get numpy; fi
echo "wheels in $dest:"
ls -1 "$dest"
echo "total: $(du -sh "$dest" | cut -f1) ($(du -sb "$dest" | cut -f1) bytes; the carry limit is 64 MiB)"
