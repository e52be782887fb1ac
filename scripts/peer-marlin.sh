#!/usr/bin/env bash
# Builds the peer that bench/bench_w4a16.py --peers marlin times (issue 29): vLLM 0.33.0's Marlin
# MoE GEMM (moe_wna16_marlin_gemm), with the two ops vLLM's fused_marlin_moe path needs around it
# (moe_align_block_size, gptq_marlin_repack), compiled from vLLM's source as one torch extension
# for sm_90a, into a git-ignored folder small enough to carry to the GPU machine (no network there).
#
# Where: a machine with the network, nvcc (CUDA 13.0, as on the GPU machine) and a torch whose
# headers carry the stable ABI (2.11 or newer). The library uses the libtorch stable C ABI only,
# built with vLLM's own TORCH_TARGET_VERSION (2.11), so it loads into the GPU machine's torch 2.11
# whatever torch compiled it (vLLM's prebuilt _moe_C is the same kind of build). Nothing of vLLM's
# is kept in this repository: the sdist is downloaded (sha256 checked) into a scratch folder.
#
# What is compiled, from vLLM's csrc unchanged:
#   moe/marlin_moe_wna16/ops.cu (+ the generated Marlin kernel instances), moe/moe_align_sum_kernels.cu,
#   quantization/marlin/gptq_marlin_repack.cu
# Kernel instances: vLLM's generator (csrc/quantization/marlin/generate_kernels.py) run for 9.0a,
# and its kernel selector cut down to the bench's weight type: bf16 activations and output,
# uint4b8 weights (GPTQ INT4), bf16 scales, group_blocks 2 (one scale per 32 along K) -- the
# 15 Marlin<> instances vLLM would pick from for those weights (every thread config and m-block
# of that type; a call with another type or group size fails with vLLM's "Unsupported shapes").
# The op schemas are taken from vLLM's torch_bindings.cpp files; they register under vLLM's
# namespaces (torch.ops._moe_C.*, torch.ops._C.gptq_marlin_repack), so do not load it into a
# process that also imports vLLM.
#
# Output: $dest/libvllm_marlin_moe_sm90a.so (under 1 MB) and $dest/BUILD (versions, flags,
# sha256). Carry $dest with the tree; on the GPU machine nothing is installed:
#   python3 bench/bench_w4a16.py --peers marlin,humming --out DIR
# (bench/peers.py loads .peer-marlin/libvllm_marlin_moe_sm90a.so, or PEER_MARLIN=path/to/the.so.)
#
# Usage: scripts/peer-marlin.sh [dest]   (default .peer-marlin)
# Env: PYTHON (a python with torch and jinja2; default python3), NVCC (default nvcc on PATH or
#      /usr/local/cuda/bin/nvcc), VLLM_SRC (an unpacked vLLM 0.33.0 source tree: skips the download),
#      JOBS (parallel nvcc processes, default nproc), WORK (scratch folder, default a temp dir)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=$(mkdir -p "${1:-$repo/.peer-marlin}" && cd "${1:-$repo/.peer-marlin}" && pwd)
py=${PYTHON:-python3}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
jobs=${JOBS:-$(nproc)}
work=${WORK:-$(mktemp -d)}
version=0.33.0
sdist_sha256=f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112
lib=libvllm_marlin_moe_sm90a.so

if [ -z "${VLLM_SRC:-}" ]; then
  # the sdist's address from the package index's simple page (the pip index this machine uses)
  tarball="$work/vllm-$version.tar.gz"
  if [ ! -f "$tarball" ]; then
    "$py" - "$tarball" "$version" <<'EOF'
import re, sys, urllib.request
out, version = sys.argv[1], sys.argv[2]
page = urllib.request.urlopen("https://pypi.org/simple/vllm/", timeout=60).read().decode()
urls = re.findall(r'href="([^"]*/vllm-%s\.tar\.gz)[^"]*"' % re.escape(version), page)
if not urls:
    sys.exit(f"vllm-{version}.tar.gz not on https://pypi.org/simple/vllm/")
urllib.request.urlretrieve(urls[0], out)
EOF
  fi
  echo "$sdist_sha256  $tarball" | sha256sum -c --quiet
  tar -xzf "$tarball" -C "$work"
  VLLM_SRC="$work/vllm-$version"
fi
csrc="$VLLM_SRC/csrc"
[ -f "$csrc/moe/marlin_moe_wna16/ops.cu" ] || { echo "no vLLM csrc under $VLLM_SRC" >&2; exit 1; }

# a copy of the Marlin MoE folder, where the generator writes its kernel instances
gen="$work/marlin_moe_wna16"
rm -rf "$gen" && cp -r "$csrc/moe/marlin_moe_wna16" "$gen"
"$py" "$csrc/quantization/marlin/generate_kernels.py" 9.0a "$gen" > "$work/generate.log"
kernels="$gen/sm80_kernel_bfloat16_u4b8_bfloat16.cu"
[ -f "$kernels" ] || { echo "the generator wrote no $kernels" >&2; exit 1; }
for f in "$gen"/sm*_kernel_*.cu; do
  [ "$f" = "$kernels" ] || rm -f "$f"
done

# the kernel selector and the instance file cut to bf16 x uint4b8 x bf16, group_blocks 2; the
# bindings: vLLM's m.def statements of the three ops, and the impl of moe_align_block_size
"$py" - "$gen" "$csrc" <<'EOF'
import os, re, sys
gen, csrc = sys.argv[1:]
want = ("a_type == vllm::kBFloat16", "b_type == vllm::kU4B8", "c_type == vllm::kBFloat16",
        "s_type == vllm::kBFloat16", "group_blocks == 2 ")
head, *branches = re.split(r"(?m)^(?=(?:else )?if \()", open(os.path.join(gen, "kernel_selector.h")).read())
kept = [b for b in branches if all(w in b.split("\n")[0] + " " for w in want)]
assert len(kept) == 15, len(kept)
kept = [re.sub(r"^else if", "if", kept[0])] + [b if b.startswith("else") else "else " + b for b in kept[1:]]
open(os.path.join(gen, "kernel_selector.h"), "w").write(head + "".join(kept) + "\n")

path = os.path.join(gen, "sm80_kernel_bfloat16_u4b8_bfloat16.cu")
text = open(path).read()
lines = text.split("\n")
first = next(i for i, l in enumerate(lines) if l.startswith("template __global__"))
def group_blocks(line):  # Marlin<a, b, c, s, threads, m, n, k, m_block_size_8, stages, group_blocks, zp>
    args = line.split("Marlin<", 1)[1].split(">(", 1)[0].split(", ")
    assert len(args) == 12 and args[:4] == ["vllm::kBFloat16.id()", "vllm::kU4B8.id()"] + ["vllm::kBFloat16.id()"] * 2, args
    return args[10]
inst = [l for l in lines if l.startswith("template __global__") and group_blocks(l) == "2"]
assert len(inst) == 15, len(inst)
open(path, "w").write("\n".join(lines[:first]) + "\n" + "\n\n".join(inst) + "\n\n}\n")

def defs(path, names):
    src = open(path).read()
    out = []
    for name in names:
        m = re.search(r'\b\w+\.def\((\s*"%s\(.*?\);)' % re.escape(name), src, re.S)
        assert m, (path, name)
        out.append("  m.def(" + m.group(1))
    return "\n".join(out)
bindings = f"""// generated by chord's scripts/peer-marlin.sh from vLLM's torch_bindings.cpp files
#include "moe/moe_ops.h"
#include <torch/csrc/stable/library.h>

STABLE_TORCH_LIBRARY_FRAGMENT(_moe_C, m) {{
{defs(os.path.join(csrc, "moe", "torch_bindings.cpp"), ["moe_align_block_size", "moe_wna16_marlin_gemm"])}
}}

STABLE_TORCH_LIBRARY_IMPL(_moe_C, CUDA, m) {{
  m.impl("moe_align_block_size", TORCH_BOX(&moe_align_block_size));
}}

STABLE_TORCH_LIBRARY_FRAGMENT(_C, m) {{
{defs(os.path.join(csrc, "torch_bindings.cpp"), ["gptq_marlin_repack"])}
}}
"""
open(os.path.join(gen, "bindings.cu"), "w").write(bindings)
EOF

read -r torch_version torch_include torch_lib < <("$py" -c "
import os, torch, torch.utils.cpp_extension as c
print(torch.__version__, ':'.join(c.include_paths()), os.path.join(os.path.dirname(torch.__file__), 'lib'))" 2>/dev/null)
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
inc=(-I"$csrc" -I"$gen")
IFS=: read -ra tinc <<< "$torch_include"
for d in "${tinc[@]}"; do inc+=(-I"$d"); done
# shellcheck disable=SC2054  # the commas are nvcc's (-gencode arch=...,code=...)
flags=(-std=c++17 -O3 -DNDEBUG -Xcompiler -fPIC -Xcompiler -O3 --expt-relaxed-constexpr -DENABLE_FP8 -DUSE_CUDA
       -DTORCH_TARGET_VERSION=0x020B000000000000ULL -DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1
       -gencode arch=compute_90a,code=sm_90a --compress-mode=size -static-global-template-stub=false)
objs=()
sources=("$gen/ops.cu" "$kernels" "$gen/bindings.cu" "$csrc/moe/moe_align_sum_kernels.cu"
         "$csrc/quantization/marlin/gptq_marlin_repack.cu")
echo "compiling ${#sources[@]} sources for sm_90a with $("$nvcc" --version | tail -1) (torch $torch_version headers), $jobs at a time"
started=$SECONDS
for src in "${sources[@]}"; do
  obj="$work/$(basename "$src" .cu).o"
  objs+=("$obj")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  "$nvcc" "${flags[@]}" "${inc[@]}" -c "$src" -o "$obj" &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n; done
for obj in "${objs[@]}"; do [ -f "$obj" ] || { echo "compile failed: $obj" >&2; exit 1; }; done
# DT_NEEDED libtorch_cpu / libtorch_cuda / libcudart.so.13: the GPU machine's torch has them loaded
"$nvcc" -shared -o "$work/$lib" "${objs[@]}" -L"$torch_lib" -ltorch_cpu -ltorch_cuda -L"$cuda_home/lib64" -lcudart
echo "compiled in $((SECONDS - started)) s"

rm -f "$dest/$lib"
cp "$work/$lib" "$dest/$lib"
{
  echo "vllm $version sdist sha256 $sdist_sha256"
  echo "$("$nvcc" --version | tail -1)"
  echo "torch headers $torch_version, TORCH_TARGET_VERSION 2.11"
  echo "flags ${flags[*]}"
  echo "ops: torch.ops._moe_C.moe_wna16_marlin_gemm, torch.ops._moe_C.moe_align_block_size, torch.ops._C.gptq_marlin_repack"
  echo "kernels: Marlin<bf16, uint4b8, bf16, bf16 scales, group_blocks 2>, $(grep -c "template __global__" "$kernels") instances"
  echo "$lib $(stat -c %s "$work/$lib") bytes, sha256 $(sha256sum "$work/$lib" | cut -d' ' -f1)"
} > "$dest/BUILD"
cat "$dest/BUILD"
echo "in $dest: $(ls "$dest" | tr '\n' ' ')"
echo "total: $(du -sh "$dest" | cut -f1) ($(du -sb "$dest" | cut -f1) bytes; the carry limit is 64 MiB)"
