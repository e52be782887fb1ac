"""Packing INT4 experts straight from the tensors a checkpoint stores.

Each reader takes the tensors under the names and dtypes its format saves them, checks
them, and packs them with pack_w4a16. Experts come first ([E, ...]) or are absent (one
matrix). What chord cannot compute exactly is refused here with the reason, at load time:
GPTQ act-order (a g_idx that is not k // group_size) and zero points that cannot be read
without doubt (GPTQ v1's overflowed zero 0, asymmetric GPTQ without its format).

Formats (N = output features, K = input features, G = group size):
- compressed-tensors pack-quantized: weight_packed int32 [N, K/8] (8 codes along K per
  word, code j in bits 4j..4j+3, stored value = q + 8), weight_scale [N, K/G] ([N, 1] for
  the channel strategy); asymmetric (symmetric: false) adds weight_zero_point int32
  [N/8, K/G] packed along N (nibble j = row 8r + j, stored value = zp + 8, so the nibble is
  the unsigned zero point of the codes).
- GPTQ: qweight int32 [K/8, N] (packed along K, same nibble order), scales [K/G, N],
  qzeros int32 [K/G, N/8] packed along N (nibble j = column 8c + j), g_idx int32 [K]
  (optional: without it the layer is taken as not act-order). v1 (AutoGPTQ, GPTQModel's
  default on disk) stores zero - 1, v2 (GPTQModel format "gptq_v2") the zero as is.
  Symmetric: every zero is 8 (0x77777777 per v1 word, 0x88888888 per v2 word).
- AWQ (GEMM layout): qweight int32 [K, N/8] (packed along N in the order 0, 2, 4, 6, 1, 3,
  5, 7), qzeros int32 [K/G, N/8] (same order, the zero point as is), scales [K/G, N].
Each reader takes the layer's bit width from its quantization config (`bits=`, default 4) and
refuses any other: an 8-bit GPTQ or compressed-tensors layer has the shapes of a 4-bit one of
twice the K. `group_size=` takes the config's group size; without it the size is K over the
scales' groups, refused where that is not a power of two (a quantizer whose K is not a
multiple of its group size stores a partial last group, which chord cannot pack). All decode
to W = (code - zero) * scale, rounded once in the activations' type: bf16
(scales rounded to bf16 once when packed) or, with dtype=torch.float16, fp16 (scales kept
as stored). A layer whose zero points are all 8 packs as symmetric INT4 (the faster
format); any other packs with its zero points (pack_w4a16(..., zero_point=...)).
"""
from typing import Optional

import torch

from ._ops import GROUP_SIZE, W4A16Weight, _check_scale_values, _fail, _format_of, pack_w4a16

# Eight nibbles of the symmetric zero point 8, as GPTQ v1 stores it (8 - 1) and as v2 does.
GPTQ_V1_SYMMETRIC_ZEROS = 0x77777777
GPTQ_V2_SYMMETRIC_ZEROS = -0x77777778  # 0x88888888 as an int32


def _require_values(t, name):
    if t.device.type == "meta":  # the readers look at the values (zero points, scales, g_idx)
        _fail(f"'{name}' is a meta tensor: the readers need its values (load the checkpoint's tensors)")


def _check(t, name, dtype=None):
    if not isinstance(t, torch.Tensor):
        _fail(f"'{name}' must be a torch.Tensor, got {type(t).__name__}")
    if dtype is not None and t.dtype != dtype:
        _fail(f"'{name}' must be {dtype}, got {t.dtype}")
    _require_values(t, name)
    if t.dim() not in (2, 3):
        _fail(f"'{name}' must be [E, ...] or a single matrix, got shape {tuple(t.shape)}")
    return t if t.dim() == 3 else t.unsqueeze(0)


def _group_size(groups, k, what, given=None):
    """The layer's group size: `given` (the quantization config's group_size; -1: one group per
    row, as GPTQ and AWQ write channel-wise) checked against the scales' groups, else K / groups.
    A quantizer whose K is not a multiple of its group size stores ceil(K / G) groups, the last
    one partial, and K / groups is then another size (K 192 at group 128: two groups, read as
    96), so without `given` a size that is not a power of two is refused."""
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or (given <= 0 and given != -1):
            _fail(f"'group_size' must be a positive int or -1 (the quantization config's), got {given!r}")
        group = k if given == -1 else given
        if k % group:
            _fail(f"{what}: K = {k} is not a multiple of the group size {given}: the checkpoint's last group is "
                  f"partial, and chord packs whole groups")
        if groups != k // group:
            _fail(f"{what}: {groups} scale groups, but K = {k} at group size {given} has {k // group}")
    else:
        if groups <= 0 or k % groups:
            _fail(f"{what}: {groups} scale groups do not divide K = {k}")
        group = k // groups
    if group % GROUP_SIZE:
        _fail(f"{what}: group size {group} is unsupported (chord needs a multiple of {GROUP_SIZE})")
    if given is None and groups > 1 and group & (group - 1):
        _fail(f"{what}: {groups} scale groups over K = {k} make a group size of {group}, which quantizers do not "
              f"write: a checkpoint whose K is not a multiple of its group size stores ceil(K / G) groups. Pass "
              f"the config's group_size= to read it (a partial last group is refused)")
    return group


def _check_scales(scale, name, axes, dtype):
    """The scale values check of pack_w4a16, on the tensor as the caller passed it: an error
    then names the caller's argument and indexes it in its own layout (GPTQ and AWQ store
    scales K-groups first, and the packer sees them transposed)."""
    _format_of(dtype)  # a clear error for a dtype pack_w4a16 would refuse
    if scale.is_floating_point() and not torch.compiler.is_compiling():
        _check_scale_values(scale, scale.to(dtype), dtype, name=name, axes=axes)


def _require_4_bit(bits, key):
    """A layer's bit width, from its quantization config (`key`): the tensors alone cannot tell
    an 8-bit layer from a 4-bit one of twice the K, so a reader told nothing would pack it."""
    if isinstance(bits, bool) or not isinstance(bits, int):
        _fail(f"'bits' must be an int (the quantization config's '{key}'), got {type(bits).__name__}")
    if bits != 4:
        raise NotImplementedError(f"chord_kernels: {bits}-bit weights ('{key}': {bits}) are unsupported; "
                                  f"chord serves 4-bit layers")


def _refuse_act_order(g_idx, name, e, k, group):
    """A checkpoint's group index per k ([K] or [E, K]) must be k // group: an act-order layer
    (GPTQ desc_act, compressed-tensors actorder: group) reorders K, which chord does not."""
    if not isinstance(g_idx, torch.Tensor):
        _fail(f"'{name}' must be a torch.Tensor, got {type(g_idx).__name__}")
    _require_values(g_idx, name)
    g = g_idx if g_idx.dim() == 2 else g_idx.unsqueeze(0)
    if g.dtype not in (torch.int32, torch.int64) or tuple(g.shape) != (e, k):
        _fail(f"'{name}' must be int32 [{e}, {k}], got {g.dtype} {tuple(g.shape)}")
    expected = torch.arange(k, device=g.device, dtype=g.dtype) // group
    if not bool((g == expected).all()):
        raise NotImplementedError(f"chord_kernels: act-order ('{name}' other than k // group_size: GPTQ desc_act, "
                                  f"compressed-tensors actorder) is unsupported")


def _unpack_cols(words: torch.Tensor) -> torch.Tensor:
    """int32 [E, R, C/8] packed along the last dimension in the plain order (nibble j = column
    8c + j, as GPTQ's qzeros and compressed-tensors' weight_zero_point transposed) -> uint8
    [E, R, C] values 0..15."""
    e, r, c8 = words.shape
    shifts = torch.arange(0, 32, 4, device=words.device, dtype=torch.int32)
    return ((words.unsqueeze(-1) >> shifts) & 0xF).to(torch.uint8).reshape(e, r, c8 * 8)


def unpack_compressed_tensors_zero_point(weight_zero_point: torch.Tensor) -> torch.Tensor:
    """compressed-tensors' weight_zero_point int32 [E, N/8, K/G] (packed along N) -> uint8
    [E, N, K/G], the unsigned zero point of the codes (the stored zp + 8)."""
    z = _check(weight_zero_point, "weight_zero_point", torch.int32)
    return _unpack_cols(z.transpose(1, 2).contiguous()).transpose(1, 2)


def from_compressed_tensors(weight_packed: torch.Tensor, weight_scale: torch.Tensor,
                            weight_zero_point: Optional[torch.Tensor] = None,
                            weight_shape: Optional[torch.Tensor] = None,
                            dtype: torch.dtype = torch.bfloat16,
                            weight_g_idx: Optional[torch.Tensor] = None, bits: int = 4,
                            group_size: Optional[int] = None) -> W4A16Weight:
    """Packs a compressed-tensors pack-quantized INT4 layer (group or channel strategy).
    weight_zero_point: absent for symmetric layers; for asymmetric ones (symmetric: false) the
    int32 [E, N/8, K/G] tensor as stored. weight_g_idx: the layer's, where it stores one
    (actorder); it must be k // group_size (act-order layers are refused). Without it the
    layer is taken as stored in K order. dtype: the activations' (and scales') type, as
    pack_w4a16 takes it. bits: the config's num_bits (anything but 4 is refused). group_size:
    the config's (-1 or None for the channel strategy); without it the size is K over the
    scales' groups, refused where that is not a power of two (a partial last group)."""
    _require_4_bit(bits, "num_bits")
    weight = _check(weight_packed, "weight_packed", torch.int32)
    scale = _check(weight_scale, "weight_scale")
    e, n, k8 = weight.shape
    k = k8 * 8
    if k == 0:
        _fail(f"'weight_packed' must hold K/8 > 0 words per row, got shape {tuple(weight.shape)}")
    if tuple(scale.shape[:2]) != (e, n):
        _fail(f"'weight_scale' must be [{e}, {n}, K/G] to match weight_packed {tuple(weight.shape)}, "
              f"got {tuple(scale.shape)}")
    if weight_shape is not None:
        if not isinstance(weight_shape, torch.Tensor):
            _fail(f"'weight_shape' must be a torch.Tensor, got {type(weight_shape).__name__}")
        _require_values(weight_shape, "weight_shape")
        if weight_shape.is_floating_point() or weight_shape.dtype == torch.bool or weight_shape.numel() not in (2, 2 * e):
            _fail(f"'weight_shape' must be integer [2] or [{e}, 2] (N, K per expert), got {weight_shape.dtype} "
                  f"{tuple(weight_shape.shape)}")
        shape = weight_shape.reshape(-1, 2).to(torch.int64)  # uint8 / int16 could not hold N or K
        wrong = (shape != torch.tensor([n, k], device=shape.device)).any(dim=1)
        if bool(wrong.any()):
            row = int(wrong.nonzero()[0])
            _fail(f"'weight_shape' says {shape[row].tolist()} (row {row}), weight_packed holds [{n}, {k}]")
    group = _group_size(scale.shape[2], k, "weight_scale", group_size)
    _check_scales(scale, "weight_scale", "(expert, row, group)", dtype)
    if weight_g_idx is not None:
        _refuse_act_order(weight_g_idx, "weight_g_idx", e, k, group)
    zeros = None
    if weight_zero_point is not None:
        z = _check(weight_zero_point, "weight_zero_point", torch.int32)
        if tuple(z.shape) != (e, n // 8, scale.shape[2]) or n % 8:
            _fail(f"'weight_zero_point' must be int32 [{e}, {n // 8}, {scale.shape[2]}] (packed along N), "
                  f"got {tuple(z.shape)}")
        zeros = unpack_compressed_tensors_zero_point(z)
    return _pack(weight, scale, group, dtype, zeros)


def _pack(weight, scale_n_first, group, dtype, zeros):
    """pack_w4a16, symmetric when every zero point is 8 (or there are none)."""
    if zeros is None or bool((zeros == 8).all()):
        return pack_w4a16(weight, scale_n_first, group_size=group, dtype=dtype)
    return pack_w4a16(weight, scale_n_first, group_size=group, dtype=dtype, zero_point=zeros.contiguous())


def unpack_gptq_zeros(qzeros: torch.Tensor, format: str) -> torch.Tensor:
    """GPTQ's qzeros int32 [E, K/G, N/8] -> the zero points uint8 [E, N, K/G]. format "v1"
    stores zero - 1 (its zero 0 is stored as -1, nibble 0xF, which AutoGPTQ's packing ORs
    into the word and so corrupts the neighbouring nibbles: refused); "v2" the zero as is."""
    if format not in ("v1", "v2"):
        _fail(f"GPTQ 'format' must be 'v1' (zero - 1 stored: AutoGPTQ, GPTQModel format 'gptq') or 'v2' (GPTQModel "
              f"format 'gptq_v2'), got {format!r}")
    z = _unpack_cols(_check(qzeros, "qzeros", torch.int32))
    if format == "v1":
        if bool((z == 15).any()):
            raise NotImplementedError("chord_kernels: GPTQ v1 qzeros hold a nibble 0xF, i.e. a zero point 0 stored "
                                      "as -1, whose packing corrupts the neighbouring zero points: re-save the "
                                      "checkpoint in the v2 form and pass format='v2'")
        z = z + 1
    return z.transpose(1, 2)


def from_gptq(qweight: torch.Tensor, scales: torch.Tensor, qzeros: Optional[torch.Tensor] = None,
              g_idx: Optional[torch.Tensor] = None, dtype: torch.dtype = torch.bfloat16,
              format: Optional[str] = None, bits: int = 4, group_size: Optional[int] = None) -> W4A16Weight:
    """Packs a 4-bit GPTQ layer. qzeros: absent or the symmetric zero (0x77777777 per word,
    or 0x88888888 in the v2 form) packs symmetric INT4; any other qzeros (sym: false) is read
    with `format`, which must then be given: "v1" (zero - 1 stored) or "v2" (zero stored).
    g_idx, when given, must be k // group_size (act-order checkpoints are refused); without
    it the layer is taken as stored in K order (desc_act: false), so pass the checkpoint's.
    dtype=torch.float16 keeps GPTQ's float16 scales as they are (activations and outputs
    float16): the checkpoint's weights bit for bit. bits: the config's bits (anything but 4 is
    refused). group_size: the config's (-1: channel-wise); without it, K over the scales' groups
    where that is a power of two."""
    _require_4_bit(bits, "bits")
    q = _check(qweight, "qweight", torch.int32)
    s = _check(scales, "scales")
    e, k8, n = q.shape
    k = k8 * 8
    if k == 0:
        _fail(f"'qweight' must hold K/8 > 0 words per column, got shape {tuple(q.shape)}")
    if s.shape[0] != e or s.shape[2] != n:
        _fail(f"'scales' must be [{e}, K/G, {n}] to match qweight {tuple(q.shape)}, got {tuple(s.shape)}")
    group = _group_size(s.shape[1], k, "scales", group_size)
    if format is not None and format not in ("v1", "v2"):
        _fail(f"GPTQ 'format' must be None, 'v1' or 'v2', got {format!r}")
    zeros = None
    if qzeros is not None:
        z = _check(qzeros, "qzeros", torch.int32)
        if tuple(z.shape) != (e, s.shape[1], n // 8):
            _fail(f"'qzeros' must be [{e}, {s.shape[1]}, {n // 8}], got {tuple(z.shape)}")
        v1 = bool((z == GPTQ_V1_SYMMETRIC_ZEROS).all())
        v2 = bool((z == GPTQ_V2_SYMMETRIC_ZEROS).all())
        symmetric = (v1 and format != "v2") or (v2 and format != "v1")
        if not symmetric:
            if format is None:
                raise NotImplementedError("chord_kernels: GPTQ qzeros are not the symmetric zero (sym: false): pass "
                                          "format='v1' (zero - 1 stored; AutoGPTQ, GPTQModel format 'gptq') or "
                                          "format='v2' (GPTQModel format 'gptq_v2') to read them")
            zeros = unpack_gptq_zeros(z, format)
    if g_idx is not None:
        _refuse_act_order(g_idx, "g_idx", e, k, group)
    _check_scales(s, "scales", "(expert, group, column)", dtype)
    # qweight packs 8 consecutive k of one column per word: transposed, it is the
    # compressed-tensors form [N, K/8], and the uint4b8 codes are chord's.
    return _pack(q.transpose(1, 2).contiguous(), s.transpose(1, 2), group, dtype, zeros)


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
             dtype: torch.dtype = torch.bfloat16, bits: int = 4, group_size: Optional[int] = None) -> W4A16Weight:
    """Packs an AWQ (GEMM layout) layer: W = (code - zero) * scale with its zero points (a
    layer whose zero points are all 8 packs as symmetric INT4). dtype=torch.float16 keeps
    AWQ's float16 scales as stored: the checkpoint's weights bit for bit. bits: the config's
    w_bit (anything but 4 is refused). group_size: the config's q_group_size / group_size (-1:
    channel-wise); without it, K over the scales' groups where that is a power of two."""
    _require_4_bit(bits, "w_bit")
    codes, zeros = unpack_awq(qweight, qzeros)
    s = _check(scales, "scales")
    e, n, k = codes.shape
    if k == 0:
        _fail(f"'qweight' must hold K > 0 rows, got shape {tuple(qweight.shape)}")
    if tuple(s.shape) != (e, zeros.shape[2], n):
        _fail(f"'scales' must be [{e}, {zeros.shape[2]}, {n}] to match qweight / qzeros, got {tuple(s.shape)}")
    group = _group_size(zeros.shape[2], k, "scales", group_size)
    _check_scales(s, "scales", "(expert, group, column)", dtype)
    return _pack(codes.contiguous(), s.transpose(1, 2), group, dtype, zeros)
