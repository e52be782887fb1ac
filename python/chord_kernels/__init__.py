"""chord_kernels: chord's W4A16 MoE GEMM operators for torch.

    from chord_kernels import pack_w4a16, indexed, contiguous, masked, grouped_mm, dequantize

Weights are INT4, symmetric (W = T((code - 8) * scale), a scale per group of 32 or a
multiple of 32 along K; from_gptq / from_compressed_tensors / from_awq pack checkpoint
tensors as stored), activations and outputs T = BF16, or FP16 for weights packed with
pack_w4a16(..., dtype=torch.float16) (fp16 scales kept as they are);
or NF4 in the bitsandbytes format (NF4Weights, nf4_grouped_mm), activations BF16 or FP16.
Every operator is a torch library op in the ``chord`` namespace (torch.ops.chord.*) with a
fake implementation; none synchronizes the host. docs/python.md has the details.

load_library(path) opens another build's libchord.so; every operator's ``library=`` runs
that call through it (bench/bench_w4a16.py --against times two builds in one process).
"""
from ._native import Library, load_library
from ._native import lib as _lib
from .activation import moe_activation
from ._ops import (
    FORMAT_INT4_G32,
    FORMAT_INT4_G32_FP16,
    FORMAT_INT4_G32_ZP,
    FORMAT_INT4_G32_ZP_FP16,
    FORMAT_INT4_G128,
    FORMAT_INT4_G128_FP16,
    FORMAT_INT4_G128_ZP,
    FORMAT_INT4_G128_ZP_FP16,
    GROUP_128,
    GROUP_SIZE,
    LAYOUT_VERSION,
    MAGIC,
    MODES,
    PACK_K,
    PACK_N,
    W4A16Weight,
    contiguous,
    contiguous_alignment,
    dequantize,
    expected_tag,
    grouped_mm,
    indexed,
    jit_stats,
    last_w4a16_kernel,
    masked,
    offsets,
    pack_w4a16,
    pack_w4a16_grouped,
    tuning_table_json,
)
from .checkpoint import from_awq, from_compressed_tensors, from_gptq
from .layer import IndexedW4A16Layer
from .nf4 import (
    FORMAT_NF4,
    NF4QuantState,
    NF4Weights,
    dequantize_quant_state,
    expected_nf4_tag,
    nf4_grouped_mm,
    quantize_nf4,
)
from .nf4_checkpoint import from_bitsandbytes, read_bitsandbytes
from .routing import block_size_for_rows, moe_align_block_size, routing_capacity

__version__ = _lib.version()

__all__ = [
    "Library", "load_library",
    "FORMAT_INT4_G32", "FORMAT_INT4_G32_FP16", "FORMAT_INT4_G32_ZP", "FORMAT_INT4_G32_ZP_FP16", "FORMAT_INT4_G128", "FORMAT_INT4_G128_FP16",
    "FORMAT_INT4_G128_ZP", "FORMAT_INT4_G128_ZP_FP16", "GROUP_128", "GROUP_SIZE", "LAYOUT_VERSION", "MAGIC", "MODES", "PACK_K", "PACK_N", "W4A16Weight", "IndexedW4A16Layer",
    "from_awq", "from_compressed_tensors", "from_gptq",
    "block_size_for_rows", "contiguous", "contiguous_alignment", "dequantize", "expected_tag", "grouped_mm",
    "indexed", "jit_stats", "last_w4a16_kernel", "masked", "moe_activation", "moe_align_block_size", "offsets", "pack_w4a16", "pack_w4a16_grouped",
    "routing_capacity", "tuning_table_json", "FORMAT_NF4", "NF4QuantState", "NF4Weights", "dequantize_quant_state", "expected_nf4_tag",
    "nf4_grouped_mm", "quantize_nf4", "from_bitsandbytes", "read_bitsandbytes",
]
