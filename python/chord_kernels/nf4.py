"""NF4 weights in the bitsandbytes format and chord's NF4 grouped GEMM, for torch.

    w = NF4Weights(experts)                    # [E, N, K] bf16 / fp16 / fp32 -> packed NF4
    out = nf4_grouped_mm(x, offsets, w)        # out[rows of e] = x[rows of e] @ W[e].T
    W = w.dequantize()                         # = bitsandbytes' dequantize_4bit, bit for bit

The quantizer runs in torch on the experts' device with the format's FP32 arithmetic
(reference/nf4_reference.hpp defines it; tests/python/test_cpu.py checks it bit for bit
against that reference): 64-element blocks along K, absmax per block, the NF4 code by the
format's decision thresholds, and by default the absmax double-quantized (mean offset,
signed dynamic 8-bit map, one FP32 scale per 256 blocks). The packed layout, the
dequantization and the GEMM are the library's (chord_nf4_pack / _dequantize / _offsets).

Like the INT4 operators in _ops.py, each GPU call is a torch library op (``chord::nf4_*``)
with a fake implementation, every check uses tensor metadata only, and nothing reads
device memory from the host, so nf4_grouped_mm can be captured in a CUDA Graph. Packing
(load time) reads the double-quantization offset to the host once.
"""
import dataclasses
import math
import numbers
import struct
from typing import Any, Optional, Sequence, Tuple, Union

import torch

from . import _ops
from ._native import lib as _C
from ._native import native as _native
from ._ops import checked_bytes, _check_device, _check_tensor, _compiling, _define_op, _fail, _raw_stream, _run_on

MAGIC = _ops.MAGIC
FORMAT_NF4 = int(_C.FORMAT_NF4)
NF4_LAYOUT_VERSION = int(_C.nf4_layout_version())
NF4_BLOCK_SIZE = 64  # elements per absmax, along K
NF4_NESTED_BLOCK_SIZE = 256  # absmax values per nested FP32 scale
PACK_N = 16
PACK_K = 64
_DTYPE_CODES = {torch.bfloat16: int(_C.DTYPE_BF16), torch.float16: int(_C.DTYPE_FP16)}

_F32 = torch.float32
_U8 = torch.uint8
_I32 = torch.int32
_FLT_MAX = 3.4028234663852886e38


def _floats(bits: Sequence[int]) -> Tuple[float, ...]:
    return struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *bits))


# The 16 NF4 values and the 15 decision thresholds between neighbouring codes, as the FP32
# bit patterns the reference uses: a threshold written as a decimal and converted through
# double can land one FP32 ulp away from the reference's (four of the fifteen do).
NF4_TABLE = _floats((0xbf800000, 0xbf3239b1, 0xbf066b30, 0xbeca32a0, 0xbe91a24d, 0xbe3d353f, 0xbdba7871,
                     0x00000000, 0x3da2faff, 0x3e24cae3, 0x3e7c04dd, 0x3ead033a, 0x3ee1a4b8, 0x3f1007ab,
                     0x3f3913b3, 0x3f800000))
NF4_THRESHOLDS = _floats((0xbf591cd9, 0xbf1c5270, 0xbeeb8480, 0xbeadea76, 0xbe703cec, 0xbe0d38bc, 0xbd3a7871,
                          0x3d22faff, 0x3df64863, 0x3e5067e0, 0x3e9582d4, 0x3ec753f9, 0x3f006d03, 0x3f248daf,
                          0x3f5c89d9))

_device_constants = {}


def _constant(name, device):
    key = (name, str(device))
    t = _device_constants.get(key)
    if t is None:
        if name == "table":
            t = torch.tensor(NF4_TABLE, dtype=_F32)
        elif name == "thresholds":
            t = torch.tensor(NF4_THRESHOLDS, dtype=_F32)
        else:
            t = dynamic_map_signed()
        t = t.to(device)
        _device_constants[key] = t
    return t


def dynamic_map_signed() -> torch.Tensor:
    """The 256 sorted FP32 entries of the signed dynamic map (the code of a double-quantized
    absmax): 7 exponent levels 10^-6 .. 10^0, level i holding the 2^i midpoints of an FP32
    linspace(0.1, 1, 2^i + 1) times the level's FP32 power of ten, both signs, plus 0 and 1.
    The linspace is torch's CPU one (first half counted up from the start, second half down
    from the end, each element one rounding), evaluated exactly in FP64 and rounded once."""
    def f32(v):
        return torch.tensor(v, dtype=_F32)

    parts = []
    for level in range(7):
        steps = (1 << level) + 1
        start, end = f32(0.1), f32(1.0)
        step = ((end - start) / f32(steps - 1)).double()
        i = torch.arange(steps, dtype=torch.float64)
        up = (step * i + start.double()).float()
        down = (end.double() - step * (steps - 1 - i)).float()
        b = torch.where(i < steps // 2, up, down)
        mid = (b[:-1] + b[1:]) / f32(2.0)
        scale = f32(10.0 ** (level - 6))
        parts += [scale * mid, -scale * mid]
    parts.append(torch.tensor([0.0, 1.0], dtype=_F32))
    return torch.cat(parts).sort().values


# -- quantization (torch, on the input's device) -----------------------------------------

def _nan_ignoring_absmax(blocks: torch.Tensor) -> torch.Tensor:
    """max |x| over the last dimension, NaN ignored, -FLT_MAX for an all-NaN row (fmaxf from
    -FLT_MAX, as the reference starts)."""
    a = blocks.abs()
    a = torch.where(torch.isnan(a), torch.full_like(a, -float("inf")), a)
    return a.amax(dim=-1).clamp_min(-_FLT_MAX)


def _reciprocal(m: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(m) / m  # an IEEE division, one rounding on every device


def _nf4_codes(scaled: torch.Tensor) -> torch.Tensor:
    """NF4 code of x / absmax: the count of thresholds below it ("x > t"); NaN gives 0."""
    codes = torch.bucketize(scaled, _constant("thresholds", scaled.device), right=False)
    return torch.where(torch.isnan(scaled), torch.zeros_like(codes), codes).to(_U8)


def _dynamic_codes(code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Index of the nearest entry of the sorted 256-entry map to x, decided exactly as the
    reference's 8-bit blockwise search does it: 7 halvings from entry 127, then the nearer
    neighbour by the FP32 midpoint, ties to the entry the search landed on."""
    pivot = torch.full(x.shape, 127, dtype=torch.long, device=x.device)
    upper_pivot = torch.full_like(pivot, 255)
    lower_pivot = torch.zeros_like(pivot)
    lower = torch.full_like(x, -1.0)
    upper = torch.full_like(x, 1.0)
    val = code[pivot]
    step = 64
    while step > 0:
        right = x > val
        lower_pivot = torch.where(right, pivot, lower_pivot)
        lower = torch.where(right, val, lower)
        upper_pivot = torch.where(right, upper_pivot, pivot)
        upper = torch.where(right, upper, val)
        pivot = torch.where(right, pivot + step, pivot - step)
        val = code[pivot]
        step //= 2
    upper = torch.where(upper_pivot == 255, code[255].expand_as(upper), upper)
    lower = torch.where(lower_pivot == 0, code[0].expand_as(lower), lower)
    above = torch.where(x > (upper + val) * 0.5, upper_pivot, pivot)
    below = torch.where(x < (lower + val) * 0.5, lower_pivot, pivot)
    return torch.where(x > val, above, below).to(_U8)


@dataclasses.dataclass
class NF4QuantState:
    """A bitsandbytes NF4 QuantState of experts [E, N, K] (blocksize 64), blocks flattened
    over [E, N, K] (64 consecutive elements along K of one row).

    packed: uint8 [E*N*K/2], element 2i in the high nibble of byte i.
    absmax: FP32 [blocks], or (double quantization) uint8 [blocks] with nested_absmax FP32
    [ceil(blocks / 256)], nested_code FP32 [256] and offset (FP32, a float or a 0-dim tensor).
    dtype: the experts' dtype (what dequantize_4bit returns).
    """

    packed: torch.Tensor
    absmax: torch.Tensor
    shape: Tuple[int, int, int]
    nested_absmax: Optional[torch.Tensor] = None
    nested_code: Optional[torch.Tensor] = None
    offset: Union[float, torch.Tensor, None] = None
    dtype: torch.dtype = torch.bfloat16

    def __post_init__(self):
        # The absmax's dtype says which form it is: read in the other form, a double-quantized
        # 8-bit absmax would scale every block by its code (0..255) instead of its value.
        for t, name in ((self.packed, "packed"), (self.absmax, "absmax")):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"chord_kernels: NF4QuantState '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if self.nested and (self.absmax.dtype != _U8 or self.nested_code is None or self.offset is None):
            _fail(f"NF4QuantState with 'nested_absmax' needs a uint8 'absmax', 'nested_code' and 'offset', got "
                  f"{self.absmax.dtype} absmax{'' if self.nested_code is not None else ' and no nested_code'}"
                  f"{'' if self.offset is not None else ' and no offset'}")
        if not self.nested and not self.absmax.is_floating_point():
            _fail(f"NF4QuantState without 'nested_absmax' needs a floating-point (FP32) 'absmax', got "
                  f"{self.absmax.dtype} (a double-quantized absmax needs its nested_absmax, nested_code and offset)")

    @property
    def nested(self) -> bool:
        return self.nested_absmax is not None

    @property
    def blocks(self) -> int:
        e, n, k = self.shape
        return e * n * k // NF4_BLOCK_SIZE


def fp32_offset(value, what: str) -> float:
    """A double-quantized absmax's offset (a number or a one-element floating tensor) as the
    FP32 value bitsandbytes restores (torch.tensor(float(x))), which must be finite."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or not value.is_floating_point():
            _fail(f"{what} must be a number or a one-element floating tensor, got {value.dtype} "
                  f"{tuple(value.shape)}")
        value = float(value)
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars are Real
        _fail(f"{what} must be a number or a one-element floating tensor, got {type(value).__name__}")
    try:
        v = struct.unpack("f", struct.pack("f", float(value)))[0]
    except (OverflowError, struct.error):
        v = math.inf
    if not math.isfinite(v):
        _fail(f"{what} {value!r} is not a finite FP32 number")
    return v


def quantize_nf4(experts: torch.Tensor, double_quant: bool = True) -> NF4QuantState:
    """Quantizes [E, N, K] (or [N, K]) BF16 / FP16 / FP32 weights to an NF4 QuantState on
    their device. K must be a multiple of 64."""
    if not isinstance(experts, torch.Tensor):
        raise TypeError(f"chord_kernels: 'experts' must be a torch.Tensor, got {type(experts).__name__}")
    if experts.dim() == 2:
        experts = experts.unsqueeze(0)
    if experts.dim() != 3:
        _fail(f"'experts' must be [E, N, K] (or [N, K]), got shape {tuple(experts.shape)}")
    if experts.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        _fail(f"'experts' must be bfloat16, float16 or float32, got {experts.dtype}")
    e, n, k = experts.shape
    if e < 1 or n < 1 or k < NF4_BLOCK_SIZE or k % NF4_BLOCK_SIZE:
        _fail(f"'experts' shape E={e} N={n} K={k}: needs E, N >= 1 and K a positive multiple of {NF4_BLOCK_SIZE}")
    device = experts.device
    blocks_per_expert = n * k // NF4_BLOCK_SIZE
    absmax = torch.empty(e * blocks_per_expert, dtype=_F32, device=device)
    packed = torch.empty(e * n * k // 2, dtype=_U8, device=device)
    # One expert at a time bounds the FP32 temporaries to one expert's size.
    for i in range(e):
        x = experts[i].reshape(-1, NF4_BLOCK_SIZE).to(_F32)  # widening is exact
        m = _nan_ignoring_absmax(x)
        codes = _nf4_codes(x * _reciprocal(m).unsqueeze(1))
        pairs = codes.view(-1, 2)
        packed[i * n * k // 2:(i + 1) * n * k // 2] = (pairs[:, 0] << 4) | pairs[:, 1]
        absmax[i * blocks_per_expert:(i + 1) * blocks_per_expert] = m
    dtype = experts.dtype
    if not double_quant:
        return NF4QuantState(packed, absmax, (e, n, k), dtype=dtype)
    blocks = absmax.numel()
    # The mean in FP64, rounded once (the reference's definition; an FP32 mean depends on
    # the reduction order of the device).
    offset = (absmax.double().sum() / blocks).float()
    centred = absmax - offset
    groups = -(-blocks // NF4_NESTED_BLOCK_SIZE)
    padded = torch.full((groups * NF4_NESTED_BLOCK_SIZE,), float("nan"), dtype=_F32, device=device)
    padded[:blocks] = centred
    absmax2 = _nan_ignoring_absmax(padded.view(groups, NF4_NESTED_BLOCK_SIZE))
    scaled = (padded.view(groups, NF4_NESTED_BLOCK_SIZE) * _reciprocal(absmax2).unsqueeze(1)).reshape(-1)[:blocks]
    code = _constant("code2", device)
    return NF4QuantState(packed, _dynamic_codes(code, scaled), (e, n, k), nested_absmax=absmax2,
                         nested_code=code.clone(), offset=offset, dtype=dtype)


def resolve_absmax(state: NF4QuantState) -> torch.Tensor:
    """The FP32 absmax per block, as dequantize_4bit resolves it: code[q] * absmax2 + offset
    (two FP32 roundings), or the FP32 absmax itself."""
    if not state.nested:
        return state.absmax.to(_F32)
    blocks = state.absmax.numel()
    scale = state.nested_absmax.repeat_interleave(NF4_NESTED_BLOCK_SIZE)[:blocks]
    offset = state.offset if isinstance(state.offset, torch.Tensor) else torch.tensor(float(state.offset or 0.0))
    return state.nested_code[state.absmax.long()] * scale + offset.to(device=scale.device, dtype=_F32)


def dequantize_quant_state(state: NF4QuantState, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The logical weight [E, N, K] of a QuantState in torch (any device): dtype(table[code] *
    absmax), the product in FP32, as dequantize_4bit computes it. A reference for the GPU
    operators; NF4Weights.dequantize() is the fast path."""
    dtype = dtype or state.dtype
    e, n, k = state.shape
    table = _constant("table", state.packed.device)
    byte = state.packed.reshape(-1).long()
    codes = torch.stack((byte >> 4, byte & 15), dim=1).reshape(-1, NF4_BLOCK_SIZE)
    values = table[codes] * resolve_absmax(state).unsqueeze(1)
    return values.to(dtype).reshape(e, n, k)


# -- packed weights -----------------------------------------------------------------------

def expected_nf4_tag(experts: int, n: int, k: int) -> Tuple[int, int, int, int, int, int, int]:
    return (MAGIC, FORMAT_NF4, NF4_LAYOUT_VERSION, NF4_BLOCK_SIZE, int(experts), int(n), int(k))


_NF4 = _ops._PackedFormat(
    label="NF4 weight", group_field="block_size", format=FORMAT_NF4,
    format_message="'w' has format {fmt}, not NF4 (" + str(FORMAT_NF4) + "); INT4 group-32 weights go through "
                   "grouped_mm",
    version=NF4_LAYOUT_VERSION, group=NF4_BLOCK_SIZE,
    buffer_bytes=lambda e, n, k: (checked_bytes(_C.nf4_weight_bytes, e, n, k),
                                  checked_bytes(_C.nf4_absmax_bytes, e, n, k)),
    weight_what="NF4 weight", second_what="NF4 absmax")


def _check_nf4_tag(tag, weight, absmax):
    """Tag fields against this library, buffers against the tag. Returns (tag, E, N, K)."""
    return _ops._check_packed(_NF4, tag, weight, absmax)


def _nf4_dims(w) -> Tuple[int, int, int]:
    return _ops._tag_dims(w.tag, _NF4.label, lambda: _check_nf4_tag(w.tag, w.weight, w.absmax))


def _dtype_code(dtype, name):
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        _fail(f"'{name}' must be bfloat16 or float16, got {dtype}")
    return code


def _check_offsets_args(x, weight, absmax, tag, offsets, out):
    tag, e, n, k = _check_nf4_tag(tag, weight, absmax)
    _dtype_code(x.dtype, "x")
    _check_tensor(x, "x", x.dtype, 2)
    if x.shape[1] != k:
        _fail(f"'x' has K = {x.shape[1]}, the NF4 weight has K = {k}")
    _check_tensor(offsets, "offsets", _I32, 1)
    if offsets.shape[0] != e:
        _fail(f"'offsets' has {offsets.shape[0]} entries, the NF4 weight has {e} experts")
    if out.dtype != x.dtype:
        _fail(f"'out' must have the dtype of 'x' ({x.dtype}), got {out.dtype}")
    if tuple(out.shape) != (x.shape[0], n):
        _fail(f"'out' must have shape {(x.shape[0], n)}, got {tuple(out.shape)}")
    if not out.is_contiguous():
        _fail(f"'out' must be contiguous, got strides {out.stride()}")
    return tag


def _check_dequantize_args(weight, absmax, tag, dtype, out):
    tag, e, n, k = _check_nf4_tag(tag, weight, absmax)
    if out.dtype not in _DTYPE_CODES or _DTYPE_CODES[out.dtype] != dtype:
        _fail(f"'out' dtype {out.dtype} does not match the dtype code {dtype}")
    if tuple(out.shape) != (e, n, k) or not out.is_contiguous():
        _fail(f"'out' must be contiguous with shape {(e, n, k)}, got {tuple(out.shape)}")
    return tag


def _launch_offsets(x, weight, absmax, tag, offsets, out, native=_C):
    tag = _check_offsets_args(x, weight, absmax, tag, offsets, out)
    dev = _check_device(x, weight, absmax, offsets, out)
    _run_on(dev, native.nf4_offsets, x.data_ptr(), _DTYPE_CODES[x.dtype], x.shape[0], tag, weight.data_ptr(),
            absmax.data_ptr(), offsets.data_ptr(), out.data_ptr(), _raw_stream(dev))


def _launch_dequantize(weight, absmax, tag, dtype, out, native=_C):
    tag = _check_dequantize_args(weight, absmax, tag, dtype, out)
    dev = _check_device(weight, absmax, out)
    _run_on(dev, native.nf4_dequantize, tag, weight.data_ptr(), absmax.data_ptr(), dtype, out.data_ptr(),
            _raw_stream(dev))


_define_op("nf4_offsets(Tensor x, Tensor weight, Tensor absmax, SymInt[] tag, Tensor offsets, Tensor(a!) out) -> ()",
           _launch_offsets, _check_offsets_args)
_define_op("nf4_dequantize(Tensor weight, Tensor absmax, SymInt[] tag, SymInt dtype, Tensor(a!) out) -> ()",
           _launch_dequantize, _check_dequantize_args)


def _as_tensor(value, name, dtype, numel, device):
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"chord_kernels: '{name}' must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype != dtype:
        _fail(f"'{name}' must be {dtype}, got {value.dtype}")
    if value.numel() != numel:
        _fail(f"'{name}' must have {numel} elements, got {value.numel()} (shape {tuple(value.shape)})")
    if value.device != device:
        _fail(f"'{name}' is on {value.device}, 'packed' on {device}")
    return value.contiguous().reshape(-1)


def _checked_state(packed, absmax, shape, nested_absmax, nested_code, offset, dtype) -> NF4QuantState:
    """A QuantState's parts checked against its shape: the pack reads E*N*K/2 packed bytes, an
    absmax per 64-block (FP32, or uint8 with the nested FP32 absmax per 256 blocks and the
    256-entry code) and the offset by value, through raw pointers; a part of another size or
    dtype would be read out of bounds or misread. Returns the state of the checked tensors."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        _fail(f"'shape' must be (E, N, K) or (N, K), got {shape!r}")
    if any(isinstance(d, bool) or not hasattr(d, "__index__") for d in shape):
        _fail(f"'shape' must hold integers, got {tuple(shape)!r}")
    shape = tuple(int(d) for d in shape)
    if len(shape) == 2:
        shape = (1,) + shape
    if len(shape) != 3 or min(shape) < 1 or shape[2] % NF4_BLOCK_SIZE:
        _fail(f"'shape' must be (E, N, K) with K a positive multiple of {NF4_BLOCK_SIZE}, got {shape}")
    e, n, k = shape
    if not isinstance(packed, torch.Tensor):
        raise TypeError(f"chord_kernels: 'packed' must be a torch.Tensor, got {type(packed).__name__}")
    if dtype not in _DTYPE_CODES and dtype != torch.float32:
        _fail(f"'dtype' must be torch.bfloat16, torch.float16 or torch.float32 (the experts' dtype), got {dtype!r}")
    device = packed.device
    blocks = e * n * k // NF4_BLOCK_SIZE
    if packed.dtype != _U8 and not packed.dtype.is_complex and packed.dtype != torch.bool and packed.is_contiguous():
        # bitsandbytes' quant_storage (bfloat16 under FSDP / QLoRA): the same bytes in other words
        packed = packed.view(_U8)
    packed = _as_tensor(packed, "packed", _U8, e * n * k // 2, device)
    if nested_absmax is None:
        if nested_code is not None or offset is not None:
            _fail("'nested_code' / 'offset' given without 'nested_absmax': pass all three (double-quantized "
                  "absmax) or none (FP32 absmax)")
        absmax = _as_tensor(absmax, "absmax", _F32, blocks, device)
    else:
        absmax = _as_tensor(absmax, "absmax", _U8, blocks, device)
        nested_absmax = _as_tensor(nested_absmax, "nested_absmax", _F32, -(-blocks // NF4_NESTED_BLOCK_SIZE), device)
        nested_code = _as_tensor(nested_code, "nested_code", _F32, 256, device)
        if offset is None:
            _fail("'offset' is required with 'nested_absmax' (the mean added back to the 8-bit absmax)")
        offset = fp32_offset(offset, "'offset'")
    return NF4QuantState(packed, absmax, shape, nested_absmax, nested_code, offset, dtype)


class NF4Weights:
    """NF4 experts [E, N, K] packed for chord's NF4 operators.

    NF4Weights(experts, double_quant=True): quantizes BF16 / FP16 / FP32 experts [E, N, K]
    (or [N, K]) on their CUDA device the way bitsandbytes does, then packs them.
    NF4Weights.from_quant_state(...): packs an existing QuantState (tensors, or a
    bitsandbytes QuantState object).

    Holds the packed weight (uint8 [E*N*K/2]), the packed FP32 absmax (uint8 [E*N*K/16]),
    the tag (magic, format, layout_version, block size 64, E, N, K) and the dtype
    dequantize() returns by default (the experts' dtype; bfloat16 for FP32 experts, since
    the library writes BF16 or FP16). keep_state=True keeps the QuantState in .quant_state.
    library= (from load_library) packs through another build's libchord.so.
    """

    def __init__(self, experts: Optional[torch.Tensor] = None, *, double_quant: bool = True,
                 quant_state: Optional[NF4QuantState] = None, keep_state: bool = False, library=None):
        if (experts is None) == (quant_state is None):
            raise TypeError("chord_kernels: NF4Weights takes the experts tensor or quant_state=, exactly one")
        if isinstance(experts, torch.Tensor) and experts.device.type != "cuda":
            _fail(f"'experts' must be on a CUDA device (packing runs there), got {experts.device}; quantize_nf4 "
                  "alone runs on any device")
        if quant_state is not None and not isinstance(quant_state, NF4QuantState):
            raise TypeError(f"chord_kernels: 'quant_state' must be an NF4QuantState, got {type(quant_state).__name__}")
        given = quant_state if quant_state is not None else quantize_nf4(experts, double_quant)
        state = _checked_state(given.packed, given.absmax, given.shape, given.nested_absmax, given.nested_code,
                               given.offset, given.dtype)
        self._pack(state, _native(library))
        # The state kept is the one given or quantized, as quantize_nf4 returns it (the offset a
        # tensor); the checked copy only feeds the pack.
        self.quant_state = given if keep_state else None

    @classmethod
    def from_quant_state(cls, packed: torch.Tensor, absmax: Any = None, shape: Optional[Sequence[int]] = None, *,
                         nested_absmax: Optional[torch.Tensor] = None, nested_code: Optional[torch.Tensor] = None,
                         offset: Union[float, torch.Tensor, None] = None, dtype: Optional[torch.dtype] = None,
                         keep_state: bool = False, library=None) -> "NF4Weights":
        """Packs a QuantState given as tensors: packed uint8 [E*N*K/2] (any shape), absmax
        FP32 [blocks], or uint8 [blocks] with nested_absmax / nested_code / offset; shape
        (E, N, K) or (N, K). `absmax` may instead be a bitsandbytes QuantState object (its
        absmax, shape, dtype, blocksize, quant_type, nested, state2 and offset are read)."""
        if absmax is not None and not isinstance(absmax, torch.Tensor) and hasattr(absmax, "blocksize"):
            qs = absmax
            if getattr(qs, "quant_type", "nf4") != "nf4":
                raise NotImplementedError(f"chord_kernels: quant_type '{qs.quant_type}' (only nf4 is supported)")
            if int(qs.blocksize) != NF4_BLOCK_SIZE:
                raise NotImplementedError(f"chord_kernels: blocksize {qs.blocksize} (only {NF4_BLOCK_SIZE})")
            nested = bool(getattr(qs, "nested", False))
            shape = tuple(qs.shape) if shape is None else shape
            dtype = dtype or getattr(qs, "dtype", None)
            absmax = qs.absmax
            if nested:
                nested_absmax, nested_code, offset = qs.state2.absmax, qs.state2.code, qs.offset
        if shape is None:
            raise TypeError("chord_kernels: from_quant_state needs the logical 'shape' (E, N, K)")
        state = _checked_state(packed, absmax, shape, nested_absmax, nested_code, offset, dtype or torch.bfloat16)
        return cls(quant_state=state, keep_state=keep_state, library=library)

    def _pack(self, state: NF4QuantState, native):
        e, n, k = state.shape
        if n % PACK_N or k % PACK_K:
            _fail(f"NF4 packing needs N % {PACK_N} == 0 and K % {PACK_K} == 0, got N={n} K={k}")
        device = state.packed.device
        tensors = [state.packed, state.absmax] + ([state.nested_absmax, state.nested_code] if state.nested else [])
        dev = _check_device(*tensors)
        weight = torch.empty(checked_bytes(native.nf4_weight_bytes, e, n, k), dtype=_U8, device=device)
        absmax_out = torch.empty(checked_bytes(native.nf4_absmax_bytes, e, n, k), dtype=_U8, device=device)
        packed = state.packed.contiguous()
        absmax = state.absmax.contiguous()
        if state.nested:
            nested_absmax, nested_code = state.nested_absmax.contiguous(), state.nested_code.contiguous()
            # The library takes the offset by value: the one host read of packing.
            offset = float(state.offset)
            nested_ptrs = (nested_absmax.data_ptr(), nested_code.data_ptr())
        else:
            offset, nested_ptrs = 0.0, (0, 0)
        tag = _run_on(dev, native.nf4_pack, packed.data_ptr(), absmax.data_ptr(), nested_ptrs[0], nested_ptrs[1],
                      offset, e, n, k, weight.data_ptr(), absmax_out.data_ptr(), _raw_stream(dev))
        if tuple(tag) != expected_nf4_tag(e, n, k):
            raise RuntimeError(f"chord_kernels: the library packed with tag {tuple(tag)}, expected "
                               f"{expected_nf4_tag(e, n, k)}")
        self.weight = weight
        self.absmax = absmax_out
        self.tag = tuple(tag)
        self.dtype = state.dtype if state.dtype in _DTYPE_CODES else torch.bfloat16

    @property
    def experts(self) -> int:
        return self.tag[4]

    @property
    def n(self) -> int:
        return self.tag[5]

    @property
    def k(self) -> int:
        return self.tag[6]

    @property
    def shape(self) -> Tuple[int, int, int]:
        return self.tag[4], self.tag[5], self.tag[6]

    @property
    def device(self) -> torch.device:
        return self.weight.device

    def dequantize(self, dtype: Optional[torch.dtype] = None, *, library=None) -> torch.Tensor:
        """The logical weight [E, N, K] in dtype (bfloat16 or float16; default self.dtype),
        bit-identical to bitsandbytes' dequantize_4bit of the QuantState."""
        dtype = dtype or self.dtype
        code = _dtype_code(dtype, "dtype")
        out = torch.empty(_nf4_dims(self), dtype=dtype, device=self.weight.device)
        if _compiling(library):
            torch.ops.chord.nf4_dequantize(self.weight, self.absmax, self.tag, code, out)
        else:
            _launch_dequantize(self.weight, self.absmax, self.tag, code, out, _native(library))
        return out

    def __repr__(self) -> str:
        e, n, k = self.shape
        return f"NF4Weights(E={e}, N={n}, K={k}, dtype={self.dtype}, device={self.device})"


def nf4_grouped_mm(x: torch.Tensor, offsets: torch.Tensor, w: NF4Weights,
                   out: Optional[torch.Tensor] = None, *, library=None) -> torch.Tensor:
    """Grouped GEMM over NF4 experts, torch._grouped_mm convention: x [S, K] bfloat16 or
    float16, rows sorted by expert; offsets int32 [E] cumulative end rows (offsets[E-1] <= S).
    Returns out [S, N] in x's dtype with out[rows of e] = x[rows of e] @ W[e].T, FP32
    accumulation; rows past offsets[E-1] are left untouched. W is the NF4 weight as the
    kernels apply it (each table value and absmax rounded to x's dtype before their product, or
    the absmax applied to FP32 sums), not bit for bit dequantize()'s single rounding.
    An INT4 W4A16Weight is served by the INT4 grouped GEMM (activations of its dtype)."""
    if isinstance(w, _ops.W4A16Weight):
        return _ops.grouped_mm(x, offsets, w, out, library=library)
    if not isinstance(w, NF4Weights):
        raise TypeError(f"chord_kernels: 'w' must be NF4Weights (or a W4A16Weight), got {type(w).__name__}")
    if out is None:
        out = torch.empty((_ops._leading(x, "x", 2)[0], _nf4_dims(w)[1]), dtype=x.dtype, device=x.device)
    if _compiling(library):
        torch.ops.chord.nf4_offsets(x, w.weight, w.absmax, w.tag, offsets, out)
    else:
        _launch_offsets(x, w.weight, w.absmax, w.tag, offsets, out, _native(library))
    return out
