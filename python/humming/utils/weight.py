"""Weight quantization helpers in plain torch (CPU or GPU).

Supported: uint4 (INT4) symmetric, the format chord's kernels read: W = (code - 8) * scale,
code in 0..15, one scale per group of consecutive k (32, any multiple of 32, or the whole
row: group size 0 or -1, channel-wise). The packed form is
int32 [..., N, K/8] with element j of each 8 in bits 4j..4j+3 (compressed-tensors
pack-quantized order).
"""
from typing import Optional, Tuple

import torch

from humming import dtypes

GROUP_SIZE = 32  # the finest group chord stores (per 128 k for a multiple of 128: the group-128 formats)


def _unsupported(what: str):
    raise NotImplementedError(f"humming (chord backend): {what} is unsupported; supported: uint4 weights, "
                              f"group size a multiple of {GROUP_SIZE} or channel-wise, symmetric, bfloat16 or float16 "
                              f"scales")


def scale_group(group_size: int, shape_k: int) -> int:
    """The number of k one scale covers: group_size, or shape_k for channel-wise scales
    (group size 0 or -1, as humming and GPTQ spell them). Anything chord's layout cannot
    hold exactly is refused."""
    if isinstance(group_size, bool) or not isinstance(group_size, int):
        _unsupported(f"group size {group_size!r}")
    group = shape_k if group_size in (0, -1) else group_size
    if group <= 0 or group % GROUP_SIZE or shape_k % group:
        _unsupported(f"group size {group_size} with K = {shape_k}")
    return group


def scale_kind(group_size: int) -> str:
    """How vLLM loads a layer's scales (and zero points): "group" for groups along K,
    "channel" for one per row (vLLM's fused-MoE loader shards the two differently, and takes
    no other kind for a tensor named *scale* or *zero*). Decided by the config alone, as vLLM's
    own GPTQ / AWQ methods decide it: under tensor parallelism a GPU's share of K can be a
    single group of a grouped layer, whose scales must still be sharded along K."""
    return "channel" if group_size in (0, -1) else "group"


def scale_attrs(group_size: int, input_dim: int, output_dim: int) -> dict:
    """vLLM's parameter attributes of a layer's scales. Groups along K: a group-quant scale
    with both dims. One per row: a channel scale, which takes the output dim only (vLLM's
    linear ChannelQuantScaleParameter refuses an input dim), and says itself whether it is
    stored K-first, as vLLM's MoE loader would otherwise infer from the two dims."""
    if scale_kind(group_size) == "group":
        return {"input_dim": input_dim, "output_dim": output_dim, "scale_type": "group"}
    return {"output_dim": output_dim, "scale_type": "channel", "is_transposed": input_dim < output_dim}


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """int codes 0..15 [..., K] -> int32 [..., K/8] (element j in bits 4j..4j+3)."""
    if codes.shape[-1] % 8:
        raise ValueError(f"pack_int4: K = {codes.shape[-1]} is not a multiple of 8")
    c = codes.to(torch.int64).reshape(*codes.shape[:-1], codes.shape[-1] // 8, 8) & 0xF
    shifts = torch.arange(0, 32, 4, dtype=torch.int64, device=codes.device)
    words = (c << shifts).sum(-1)
    words = torch.where(words >= 2**31, words - 2**32, words)  # two's complement wrap into int32
    return words.to(torch.int32)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """int32 [..., K/8] -> int32 codes [..., K]."""
    if packed.dtype != torch.int32:
        raise ValueError(f"unpack_int4: expected int32, got {packed.dtype}")
    shifts = torch.arange(0, 32, 4, dtype=torch.int32, device=packed.device)
    codes = (packed.unsqueeze(-1) >> shifts) & 0xF
    return codes.reshape(*packed.shape[:-1], packed.shape[-1] * 8)


def pack_zero_point(zero_point: torch.Tensor) -> torch.Tensor:
    """Zero points 0..15 [..., N, K/group] -> the humming form int32 [..., N/8, K/group], packed
    along N (nibble j of word r is row 8r + j), as compressed-tensors stores weight_zero_point."""
    if zero_point.shape[-2] % 8:
        raise ValueError(f"pack_zero_point: N = {zero_point.shape[-2]} is not a multiple of 8")
    return pack_int4(zero_point.transpose(-1, -2)).transpose(-1, -2).contiguous()


def unpack_zero_point(zero_point: torch.Tensor) -> torch.Tensor:
    """The humming form int32 [..., N/8, K/group] -> zero points uint8 [..., N, K/group]."""
    return unpack_int4(zero_point.transpose(-1, -2).contiguous()).transpose(-1, -2).to(torch.uint8).contiguous()


def quantize_weight(
    weight: torch.Tensor,
    dtype: dtypes.DataType,
    scale_dtype: Optional[dtypes.DataType],
    group_size: int,
    group_size_n: Optional[int] = None,
    has_zero_point: bool = False,
    has_global_scale: bool = False,
    is_fp_zero_point: bool = False,
    pack: bool = False,
    allow_negative_scale: bool = True,
) -> Tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
    """weight float [.., N, K] -> (codes, scale, zero_point, global_scale).

    codes: int32 [.., N, K] (pack=False) or int32 [.., N, K/8] (pack=True); scale in
    scale_dtype (bfloat16, the default, or float16: the model dtype, which chord stores the
    scales in) [.., N, K/group] (one column channel-wise); zero_point and global_scale are
    None (symmetric, no tensor scale). The scale is absmax / 7 rounded to the scale dtype, and the codes are rounded
    against that rounded scale, so dequantize_weight reproduces what the kernels compute.
    """
    del allow_negative_scale  # the symmetric INT4 scale is always positive
    dtype = dtypes.DataType.from_str(dtype)
    if dtype not in (dtypes.uint4, dtypes.int4):
        _unsupported(f"weight type {dtype}")
    if group_size_n not in (None, 0, 1):
        _unsupported(f"block scales (group_size_n = {group_size_n})")
    if has_zero_point or is_fp_zero_point:
        _unsupported("a zero point (asymmetric quantization)")
    if has_global_scale:
        _unsupported("a global (tensor) scale")
    scale_dtype = dtypes.bfloat16 if scale_dtype is None else dtypes.DataType.from_any(scale_dtype)
    if scale_dtype not in (dtypes.bfloat16, dtypes.float16):
        _unsupported(f"scale type {scale_dtype}")
    if weight.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"quantize_weight: expected a float weight, got {weight.dtype}")
    if weight.dim() not in (2, 3) or weight.shape[-1] % GROUP_SIZE:
        raise ValueError(f"quantize_weight: expected [.., N, K] with K % {GROUP_SIZE} == 0, got {tuple(weight.shape)}")
    group = scale_group(group_size, weight.shape[-1])

    w = weight.float().reshape(*weight.shape[:-1], weight.shape[-1] // group, group)
    scale = (w.abs().amax(-1) / 7.0).to(dtypes.torch_dtype_map[scale_dtype])
    s = scale.float().unsqueeze(-1)
    q = torch.where(s > 0, torch.round(w / torch.where(s > 0, s, torch.ones_like(s))), torch.zeros_like(w))
    codes = (q.clamp(-8, 7) + 8).to(torch.int32).reshape(weight.shape)
    if pack:
        codes = pack_int4(codes)
    return codes, scale, None, None


def dequantize_weight(
    weight: torch.Tensor,
    weight_scale: Optional[torch.Tensor],
    zero_point: Optional[torch.Tensor] = None,
    global_scale: Optional[torch.Tensor] = None,
    dtype: dtypes.DataType = dtypes.uint4,
    packed: bool = False,
) -> torch.Tensor:
    """codes (int32 [.., N, K], or [.., N, K/8] packed) and scales [.., N, K/group] -> float32
    (code - zero) * scale, zero = 8, or zero_point in the humming form (int32 [.., N/8, K/group],
    packed along N; pack_zero_point)."""
    dtype = dtypes.DataType.from_str(dtype)
    if dtype not in (dtypes.uint4, dtypes.int4):
        _unsupported(f"weight type {dtype}")
    if global_scale is not None:
        _unsupported("a global (tensor) scale")
    codes = unpack_int4(weight) if packed else weight.to(torch.int32)
    if zero_point is not None:
        zero = unpack_zero_point(zero_point).to(torch.int32)
        values = (codes - zero.repeat_interleave(codes.shape[-1] // zero.shape[-1], -1)).float()
    else:
        values = (codes - 8).float()
    if weight_scale is None:
        return values
    group = values.shape[-1] // weight_scale.shape[-1]
    return values * weight_scale.float().repeat_interleave(group, -1)
