"""Packing INT4 experts straight from the tensors a checkpoint stores.

Each reader takes the tensors under the names and dtypes its format saves them, checks
them, and packs them with pack_w4a16. Experts come first ([E, ...]) or are absent (one
matrix). What chord cannot compute exactly is refused here with the reason, at load time:
zero points other than 8 (AWQ, asymmetric GPTQ / compressed-tensors) and GPTQ act-order (a
g_idx that is not k // group_size).

Formats (N = output features, K = input features, G = group size):
- compressed-tensors pack-quantized, symmetric: weight_packed int32 [N, K/8] (8 codes along
  K per word, code j in bits 4j..4j+3, stored value = q + 8), weight_scale [N, K/G] ([N, 1]
  for the channel strategy).
- GPTQ, symmetric (uint4b8): qweight int32 [K/8, N] (packed along K, same nibble order),
  scales [K/G, N], qzeros int32 [K/G, N/8] holding 7 per nibble (the zero 8 stored minus
  one; checkpoints saved in GPTQModel's v2 form hold 8), g_idx int32 [K] (optional).
- AWQ (GEMM layout): qweight int32 [K, N/8] (packed along N in the order 0, 2, 4, 6, 1, 3,
  5, 7), qzeros int32 [K/G, N/8] (same order, the zero point as is), scales [K/G, N]:
  W = (code - zero) * scale; served when every zero point is 8.
All decode to W = (code - 8) * scale, which is chord's INT4 form, in the activations'
type: bf16 (scales rounded to bf16 once when packed) or, with dtype=torch.float16, fp16
(scales kept as stored).
"""
from typing import Optional

import torch

from ._ops import GROUP_SIZE, W4A16Weight, _fail, pack_w4a16

# Eight nibbles of the symmetric zero point 8, as GPTQ v1 stores it (8 - 1) and as v2 does.
_GPTQ_V1_SYMMETRIC_ZEROS = 0x77777777
_GPTQ_V2_SYMMETRIC_ZEROS = -0x77777778  # 0x88888888 as an int32


def _check(t, name, dtype=None):
    if not isinstance(t, torch.Tensor):
        _fail(f"'{name}' must be a torch.Tensor, got {type(t).__name__}")
    if dtype is not None and t.dtype != dtype:
        _fail(f"'{name}' must be {dtype}, got {t.dtype}")
    if t.dim() not in (2, 3):
        _fail(f"'{name}' must be [E, ...] or a single matrix, got shape {tuple(t.shape)}")
    return t if t.dim() == 3 else t.unsqueeze(0)


def _group_size(groups, k, what):
    if groups <= 0 or k % groups:
        _fail(f"{what}: {groups} scale groups do not divide K = {k}")
    group = k // groups
    if group % GROUP_SIZE:
        _fail(f"{what}: group size {group} is unsupported (chord needs a multiple of {GROUP_SIZE})")
    return group


def from_compressed_tensors(weight_packed: torch.Tensor, weight_scale: torch.Tensor,
                            weight_zero_point: Optional[torch.Tensor] = None,
                            weight_shape: Optional[torch.Tensor] = None,
                            dtype: torch.dtype = torch.bfloat16) -> W4A16Weight:
    """Packs a compressed-tensors pack-quantized INT4 layer (symmetric; group or channel
    strategy). weight_zero_point must be absent: asymmetric layers are refused. dtype: the
    activations' (and scales') type, as pack_w4a16 takes it."""
    if weight_zero_point is not None:
        raise NotImplementedError("chord_kernels: compressed-tensors weight_zero_point (asymmetric INT4) is "
                                  "unsupported: chord serves symmetric INT4")
    weight = _check(weight_packed, "weight_packed", torch.int32)
    scale = _check(weight_scale, "weight_scale")
    e, n, k8 = weight.shape
    k = k8 * 8
    if tuple(scale.shape[:2]) != (e, n):
        _fail(f"'weight_scale' must be [{e}, {n}, K/G] to match weight_packed {tuple(weight.shape)}, "
              f"got {tuple(scale.shape)}")
    if weight_shape is not None:
        shape = weight_shape.reshape(-1, 2)
        if not bool((shape == torch.tensor([n, k], device=shape.device, dtype=shape.dtype)).all()):
            _fail(f"'weight_shape' says {shape[0].tolist()}, weight_packed holds [{n}, {k}]")
    group = _group_size(scale.shape[2], k, "weight_scale")
    return pack_w4a16(weight, scale, group_size=group, dtype=dtype)


def from_gptq(qweight: torch.Tensor, scales: torch.Tensor, qzeros: Optional[torch.Tensor] = None,
              g_idx: Optional[torch.Tensor] = None, dtype: torch.dtype = torch.bfloat16) -> W4A16Weight:
    """Packs a symmetric 4-bit GPTQ layer. qzeros, when given, must hold the symmetric zero
    (0x77777777 per word, or 0x88888888 in the v2 form); g_idx, when given, must be
    k // group_size (act-order checkpoints are refused). dtype=torch.float16 keeps GPTQ's
    float16 scales as they are (activations and outputs float16): the checkpoint's weights
    bit for bit."""
    q = _check(qweight, "qweight", torch.int32)
    s = _check(scales, "scales")
    e, k8, n = q.shape
    k = k8 * 8
    if s.shape[0] != e or s.shape[2] != n:
        _fail(f"'scales' must be [{e}, K/G, {n}] to match qweight {tuple(q.shape)}, got {tuple(s.shape)}")
    group = _group_size(s.shape[1], k, "scales")
    if qzeros is not None:
        z = _check(qzeros, "qzeros", torch.int32)
        if tuple(z.shape) != (e, s.shape[1], n // 8):
            _fail(f"'qzeros' must be [{e}, {s.shape[1]}, {n // 8}], got {tuple(z.shape)}")
        v1, v2 = bool((z == _GPTQ_V1_SYMMETRIC_ZEROS).all()), bool((z == _GPTQ_V2_SYMMETRIC_ZEROS).all())
        if not (v1 or v2):
            raise NotImplementedError("chord_kernels: GPTQ qzeros other than the symmetric zero (sym: false) are "
                                      "unsupported: chord serves symmetric INT4")
    if g_idx is not None:
        g = g_idx if g_idx.dim() == 2 else g_idx.unsqueeze(0)
        if g.dtype not in (torch.int32, torch.int64) or tuple(g.shape) != (e, k):
            _fail(f"'g_idx' must be int32 [{e}, {k}], got {g.dtype} {tuple(g.shape)}")
        expected = torch.arange(k, device=g.device, dtype=g.dtype) // group
        if not bool((g == expected).all()):
            raise NotImplementedError("chord_kernels: GPTQ act-order (desc_act: a g_idx other than k // group_size) "
                                      "is unsupported")
    # qweight packs 8 consecutive k of one column per word: transposed, it is the
    # compressed-tensors form [N, K/8], and the uint4b8 codes are chord's.
    return pack_w4a16(q.transpose(1, 2).contiguous(), s.transpose(1, 2), group_size=group, dtype=dtype)


# Nibble i of an AWQ word holds column 8 * word + _AWQ_ORDER[i] (AutoAWQ's GEMM packing).
_AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def _unpack_awq_words(words: torch.Tensor) -> torch.Tensor:
    """int32 [E, R, N/8] in AWQ's interleaved order -> uint8 [E, R, N] values 0..15."""
    e, r, n8 = words.shape
    out = torch.empty(e, r, n8, 8, dtype=torch.uint8, device=words.device)
    for nibble, column in enumerate(_AWQ_ORDER):
        out[..., column] = ((words >> (4 * nibble)) & 0xF).to(torch.uint8)
    return out.reshape(e, r, n8 * 8)


def unpack_awq(qweight: torch.Tensor, qzeros: torch.Tensor):
    """AWQ's qweight int32 [E, K, N/8] and qzeros int32 [E, K/G, N/8] -> codes uint8
    [E, N, K] and zero points uint8 [E, N, K/G] (W = (code - zero) * scale), N first as
    chord holds weights."""
    q = _check(qweight, "qweight", torch.int32)
    z = _check(qzeros, "qzeros", torch.int32)
    if z.shape[0] != q.shape[0] or z.shape[2] != q.shape[2] or z.shape[1] <= 0 or q.shape[1] % z.shape[1]:
        _fail(f"'qzeros' must be [{q.shape[0]}, K/G, {q.shape[2]}] with K/G dividing K = {q.shape[1]}, "
              f"got {tuple(z.shape)}")
    return _unpack_awq_words(q).transpose(1, 2), _unpack_awq_words(z).transpose(1, 2)


def from_awq(qweight: torch.Tensor, qzeros: torch.Tensor, scales: torch.Tensor,
             dtype: torch.dtype = torch.bfloat16) -> W4A16Weight:
    """Packs an AWQ (GEMM layout) layer whose zero points are all 8, i.e. symmetric weights.
    Any other zero point is refused: chord does not serve asymmetric INT4 yet."""
    codes, zeros = unpack_awq(qweight, qzeros)
    s = _check(scales, "scales")
    e, n, k = codes.shape
    if tuple(s.shape) != (e, zeros.shape[2], n):
        _fail(f"'scales' must be [{e}, {zeros.shape[2]}, {n}] to match qweight / qzeros, got {tuple(s.shape)}")
    if not bool((zeros == 8).all()):
        raise NotImplementedError("chord_kernels: AWQ zero points other than 8 (asymmetric INT4) are unsupported: "
                                  "chord serves symmetric INT4 (compressed-tensors, GPTQ sym)")
    group = _group_size(zeros.shape[2], k, "scales")
    return pack_w4a16(codes.contiguous(), s.transpose(1, 2), group_size=group, dtype=dtype)
