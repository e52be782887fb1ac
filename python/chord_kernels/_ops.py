"""torch operators over chord's W4A16 C API.

Each operator is a torch library op (namespace ``chord``, defined by schema, implemented for
CUDA) with a fake implementation, so torch.compile(fullgraph=True) traces through it. No
operator reads device memory from the host or synchronizes: every check below uses tensor
metadata only, and the launch goes on torch's current stream, so each call can be captured in
a CUDA Graph.

In eager mode the public functions call the same checked launch directly instead of going
through the dispatcher (the op and the direct call run the same Python code; the
dispatcher round trip costs several microseconds per call on the host). Under
torch.compile the op is what gets traced.
"""
import dataclasses
from typing import Optional, Tuple

import torch

from ._native import lib as _C
from ._native import native as _native

MAGIC = int(_C.W4A16_MAGIC)
FORMAT_INT4_G32 = int(_C.FORMAT_INT4_G32)  # bf16 scales, activations and outputs
FORMAT_INT4_G32_FP16 = int(_C.FORMAT_INT4_G32_FP16)  # fp16 scales, activations and outputs
# Asymmetric INT4 (a zero point per row and group): the scales buffer holds {scale, bias} pairs.
FORMAT_INT4_G32_ZP = int(getattr(_C, "FORMAT_INT4_G32_ZP", 4))  # bf16
FORMAT_INT4_G32_ZP_FP16 = int(getattr(_C, "FORMAT_INT4_G32_ZP_FP16", 5))  # fp16
# Group 128: the same four variants with one scale (or {scale, bias} pair) per 128 k.
FORMAT_INT4_G128 = int(getattr(_C, "FORMAT_INT4_G128", 6))  # bf16
FORMAT_INT4_G128_FP16 = int(getattr(_C, "FORMAT_INT4_G128_FP16", 7))  # fp16
FORMAT_INT4_G128_ZP = int(getattr(_C, "FORMAT_INT4_G128_ZP", 8))  # bf16, zero points
FORMAT_INT4_G128_ZP_FP16 = int(getattr(_C, "FORMAT_INT4_G128_ZP_FP16", 9))  # fp16, zero points
GROUP_SIZE = 32
GROUP_128 = 128  # the group-128 formats' group (tag field group_size)
LAYOUT_VERSION = int(_C.layout_version())
PACK_N = 16  # N must be a multiple of this (docs/packed_layout.md)
PACK_K = 64  # K must be a multiple of this
SRC_CODES = 0  # chord_w4a16_pack src_format: uint8 codes [E, N, K]
SRC_COMPRESSED = 1  # compressed-tensors int32 [E, N, K/8]
SRC_SCALES_FP16 = int(_C.W4A16_SRC_SCALES_FP16)  # OR-ed into src_format: the scales are fp16
SRC_GROUP_128 = int(getattr(_C, "W4A16_SRC_GROUP_128", 0x20))  # OR-ed into src_format: scales per 128 k

# Every mode reads the one packed layout; `mode` is accepted and checked for callers that
# pack per mode (pack_w4a16_grouped).
MODES = ("indexed", "contiguous", "masked", "offsets", "grouped_mm")

_BF16 = torch.bfloat16
_F16 = torch.float16
_I32 = torch.int32
_U8 = torch.uint8

# The activation / output dtype of each INT4 format: the type its scales are stored in.
FORMAT_DTYPES = {FORMAT_INT4_G32: _BF16, FORMAT_INT4_G32_FP16: _F16,
                 FORMAT_INT4_G32_ZP: _BF16, FORMAT_INT4_G32_ZP_FP16: _F16,
                 FORMAT_INT4_G128: _BF16, FORMAT_INT4_G128_FP16: _F16,
                 FORMAT_INT4_G128_ZP: _BF16, FORMAT_INT4_G128_ZP_FP16: _F16}
_DTYPE_FORMATS = {_BF16: FORMAT_INT4_G32, _F16: FORMAT_INT4_G32_FP16}
_DTYPE_ZP_FORMATS = {_BF16: FORMAT_INT4_G32_ZP, _F16: FORMAT_INT4_G32_ZP_FP16}
_DTYPE_G128_FORMATS = {_BF16: FORMAT_INT4_G128, _F16: FORMAT_INT4_G128_FP16}
_DTYPE_ZP_G128_FORMATS = {_BF16: FORMAT_INT4_G128_ZP, _F16: FORMAT_INT4_G128_ZP_FP16}
ZP_FORMATS = (FORMAT_INT4_G32_ZP, FORMAT_INT4_G32_ZP_FP16, FORMAT_INT4_G128_ZP, FORMAT_INT4_G128_ZP_FP16)
G128_FORMATS = (FORMAT_INT4_G128, FORMAT_INT4_G128_FP16, FORMAT_INT4_G128_ZP, FORMAT_INT4_G128_ZP_FP16)

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # one C call, no Stream object
except AttributeError:  # pragma: no cover - older torch
    def _raw_stream(device_index):
        return torch.cuda.current_stream(device_index).cuda_stream


@dataclasses.dataclass(frozen=True)
class W4A16Weight:
    """A packed INT4 group-32 weight: the two device buffers and the tag that names them.

    tag = (magic, format, layout_version, group_size, E, N, K); every operator checks it
    (here, and again in the library) before it launches. The format (FORMAT_INT4_G32 or
    FORMAT_INT4_G32_FP16) names the scales' dtype, which is the dtype of the activations and
    outputs of every operator on this weight (`dtype`).
    """

    weight: torch.Tensor  # uint8 [chord weight_bytes(E, N, K)]
    scales: torch.Tensor  # uint8 [chord scale_bytes(E, N, K)]
    tag: Tuple[int, int, int, int, int, int, int]

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
    def layout_version(self) -> int:
        return self.tag[2]

    @property
    def dtype(self) -> torch.dtype:
        """Activation / output dtype: bfloat16 (FORMAT_INT4_G32) or float16 (FORMAT_INT4_G32_FP16)."""
        return FORMAT_DTYPES.get(self.tag[1], _BF16)

    @property
    def device(self) -> torch.device:
        return self.weight.device

    @property
    def has_zero_point(self) -> bool:
        """True for asymmetric weights (pack_w4a16(..., zero_point=...)): W = T((code - zp) * scale)."""
        return self.tag[1] in ZP_FORMATS

    @property
    def group_size(self) -> int:
        """k per packed scale: 32, or 128 for the group-128 formats (G128_FORMATS)."""
        return self.tag[3]


def _format_of(dtype, zero_point=False, group=GROUP_SIZE):
    if group == GROUP_128:
        table = _DTYPE_ZP_G128_FORMATS if zero_point else _DTYPE_G128_FORMATS
    else:
        table = _DTYPE_ZP_FORMATS if zero_point else _DTYPE_FORMATS
    fmt = table.get(dtype)
    if fmt is None:
        _fail(f"'dtype' must be torch.bfloat16 or torch.float16 (the activation and scale dtype), got {dtype}")
    return fmt


def packed_group(group_size: int, k: int) -> int:
    """The group pack_w4a16 stores a checkpoint group in: 128 when the group is a multiple of
    128 (128, 256, ..., or channel-wise) and K % 128 == 0, else 32 (the group repeated per 32)."""
    return GROUP_128 if group_size % GROUP_128 == 0 and k % GROUP_128 == 0 else GROUP_SIZE


def expected_tag(experts: int, n: int, k: int, dtype: torch.dtype = torch.bfloat16,
                 zero_point: bool = False, group_size: int = GROUP_SIZE) -> Tuple[int, int, int, int, int, int, int]:
    """The tag pack_w4a16(..., group_size, dtype=dtype) gives an [E, N, K] weight (with
    zero_point=...: zero_point=True). group_size: the checkpoint's (packed_group picks the
    stored group)."""
    group = packed_group(group_size, k)
    return (MAGIC, _format_of(dtype, zero_point, group), LAYOUT_VERSION, group, int(experts), int(n), int(k))


# -- checks (metadata only) ---------------------------------------------------------------

# (family label, tag) -> (E, N, K, weight bytes, scale bytes), filled by the first check of each
# distinct tag (the per-call path then costs one dict lookup). Keyed by the family too: a tag that
# passed NF4's checks has not passed INT4's.
_checked_tags = {}


def _fail(message):
    raise ValueError("chord_kernels: " + message)


def checked_bytes(size_fn, e, n, k):
    """A library size helper's answer; -1 (a shape the library's packer refuses) becomes a
    ValueError naming the shape instead of reaching torch.empty."""
    size = size_fn(e, n, k)
    if size < 0:
        _fail(f"shape E={e} N={n} K={k} is out of the packed layout's range ({size_fn.__name__})")
    return size


_INT4_LABEL = "packed weight"  # the INT4 formats' _PackedFormat.label


@dataclasses.dataclass(frozen=True)
class _PackedFormat:
    """What the tag of one packed-weight format must say, and how its two buffers are named
    and sized (INT4 group-32 here; NF4 in nf4.py)."""
    label: str            # "packed weight" / "NF4 weight"
    group_field: str      # name of tag field 3
    format: int
    format_message: str   # for a wrong format; "{fmt}" is the tag's
    version: int
    group: int
    buffer_bytes: object  # (E, N, K) -> (weight bytes, second buffer bytes)
    weight_what: str
    second_what: str


def _check_packed(spec, tag, weight, second):
    """Tag fields against this library (once per distinct tag), buffers against the tag on
    every call. Returns (tag, E, N, K)."""
    if type(tag) is not tuple:
        tag = tuple(tag)
    known = _checked_tags.get((spec.label, tag))
    if known is None:
        label, group_field = spec.label, spec.group_field
        if len(tag) != 7:
            _fail(f"{label} tag must have 7 fields (magic, format, layout_version, {group_field}, E, N, K), got {tag}")
        magic, fmt, tag_version, tag_group, e, n, k = tag
        if magic != MAGIC:
            _fail(f"not a chord packed weight (tag magic 0x{magic:08x}, expected 0x{MAGIC:08x})")
        if fmt != spec.format:
            _fail(spec.format_message.format(fmt=fmt))
        if tag_version != spec.version:
            _fail(f"{label} has layout version {tag_version}; this library reads version {spec.version} "
                  "(re-pack the weights)")
        if tag_group != spec.group:
            _fail(f"{label} {group_field.replace('_', ' ')} {tag_group}; supported: {spec.group}")
        if e < 1 or n < PACK_N or k < PACK_K or n % PACK_N or k % PACK_K:
            _fail(f"{label} shape E={e} N={n} K={k} is invalid (N % {PACK_N} == 0, K % {PACK_K} == 0)")
        known = (e, n, k) + tuple(spec.buffer_bytes(e, n, k))
        _checked_tags[(spec.label, tag)] = known
    e, n, k, weight_bytes, second_bytes = known
    _check_buffer(weight, spec.weight_what, weight_bytes, e, n, k)
    _check_buffer(second, spec.second_what, second_bytes, e, n, k)
    return tag, e, n, k


def _check_buffer(t, what, nbytes, e, n, k):
    if t.dtype != _U8 or t.numel() != nbytes or not t.is_contiguous():
        _fail(f"{what} buffer must be contiguous uint8 of {nbytes} bytes for E={e} N={n} K={k}, got {t.dtype} "
              f"with {t.numel()} elements")


def _format_scale_bytes(fmt):
    """(E, N, K) -> the scales buffer's bytes of INT4 format fmt (the library's size helper)."""
    def size(e, n, k):
        nbytes = _C.format_scale_bytes(fmt, e, n, k)
        if nbytes < 0:
            _fail(f"shape E={e} N={n} K={k} is out of format {fmt}'s range (group 128 needs K % 128 == 0)")
        return nbytes
    return size


def _int4_format(fmt):
    """The INT4 packed format `fmt` (both scale dtypes have the same layout and sizes; the
    zero-point formats' scales buffer holds 4-byte {scale, bias} entries; the group-128 formats
    one entry per 128 k)."""
    if fmt in G128_FORMATS:
        scale_bytes = _format_scale_bytes(fmt)
    elif fmt in ZP_FORMATS:
        scale_bytes = lambda e, n, k: checked_bytes(_C.zp_scale_bytes, e, n, k)  # noqa: E731
    else:
        scale_bytes = lambda e, n, k: checked_bytes(_C.scale_bytes, e, n, k)  # noqa: E731
    return _PackedFormat(
        label=_INT4_LABEL, group_field="group_size", format=fmt,
        format_message=(f"packed weight format {{fmt}} is not INT4 ({FORMAT_INT4_G32}: bfloat16, "
                        f"{FORMAT_INT4_G32_FP16}: float16, {FORMAT_INT4_G32_ZP} / {FORMAT_INT4_G32_ZP_FP16}: "
                        f"the same with zero points, {FORMAT_INT4_G128} / {FORMAT_INT4_G128_FP16} / "
                        f"{FORMAT_INT4_G128_ZP} / {FORMAT_INT4_G128_ZP_FP16}: group 128)"),
        version=LAYOUT_VERSION, group=GROUP_128 if fmt in G128_FORMATS else GROUP_SIZE,
        buffer_bytes=lambda e, n, k: (checked_bytes(_C.weight_bytes, e, n, k), scale_bytes(e, n, k)),
        weight_what="packed weight", second_what="packed scales")


_INT4_FORMATS = {fmt: _int4_format(fmt) for fmt in FORMAT_DTYPES}


def _check_tag(tag, weight, scales):
    """Tag fields against this library, buffers against the tag. Returns (tag, E, N, K,
    dtype), dtype the activation / output dtype the tag's format names."""
    fmt = tag[1] if len(tag) > 1 else None
    spec = _INT4_FORMATS.get(fmt, _INT4_FORMATS[FORMAT_INT4_G32])  # an unknown format fails in the check
    tag, e, n, k = _check_packed(spec, tag, weight, scales)
    return tag, e, n, k, FORMAT_DTYPES[spec.format]


def _check_tensor(t, name, dtype, dim):
    if t.dtype != dtype:
        _fail(f"'{name}' must be {dtype}, got {t.dtype}")
    if t.dim() != dim:
        _fail(f"'{name}' must have {dim} dimensions, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        _fail(f"'{name}' must be contiguous (row-major), got strides {t.stride()}")


def _check_act(t, name, dtype, dim):
    """An activation tensor of a call on a weight whose format names `dtype`."""
    if t.dtype != dtype and t.dtype in _DTYPE_FORMATS:
        _fail(f"'{name}' is {t.dtype} but the packed weight's format ({_DTYPE_FORMATS[dtype]}) takes {dtype} "
              f"activations: pack with pack_w4a16(..., dtype={t.dtype}) for {t.dtype}")
    _check_tensor(t, name, dtype, dim)


def _check_out(out, shape, name="out", dtype=_BF16):
    if out.dtype != dtype:
        _fail(f"'{name}' must be {dtype} (the packed weight's dtype), got {out.dtype}")
    if out.shape != shape:  # torch.Size is a tuple
        _fail(f"'{name}' must have shape {shape}, got {tuple(out.shape)}")
    if not out.is_contiguous():
        _fail(f"'{name}' must be contiguous, got strides {out.stride()}")


def _check_device(*tensors):
    """All on one CUDA device (_run_on makes it current for the launch). Returns the device
    index."""
    index = tensors[0].get_device()
    if index < 0:
        _fail(f"tensors must be on a CUDA device, got {tensors[0].device}")
    for t in tensors[1:]:
        if t.get_device() != index:
            _fail(f"all tensors must be on one CUDA device: {tensors[0].device} and {t.device}")
    return index


try:
    _current_device = torch._C._cuda_getDevice  # one C call (CUDA is initialized: the tensors live there)
except AttributeError:  # pragma: no cover - older torch
    _current_device = torch.cuda.current_device


def _run_on(index, launch, *args):
    """launch(*args) with cuda:index current. The library launches in the current CUDA context
    (it refuses a stream of another), while torch's own ops run on their tensors' device
    whatever the current one is: a call on another device makes it current for the call."""
    if _current_device() == index:
        return launch(*args)
    with torch.cuda.device(index):
        return launch(*args)


def _check_contiguous_args(a, weight, scales, tag, m_indices, out):
    tag, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_act(a, "a", dtype, 2)
    if a.shape[1] != k:
        _fail(f"'a' has K = {a.shape[1]}, the packed weight has K = {k}")
    _check_tensor(m_indices, "m_indices", _I32, 1)
    if m_indices.shape[0] != a.shape[0]:
        _fail(f"'m_indices' has {m_indices.shape[0]} rows, 'a' has {a.shape[0]}")
    _check_out(out, (a.shape[0], n), dtype=dtype)
    return tag


def _check_masked_args(a, weight, scales, tag, masked_m, out):
    tag, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_act(a, "a", dtype, 3)
    if a.shape[2] != k:
        _fail(f"'a' has K = {a.shape[2]}, the packed weight has K = {k}")
    if a.shape[0] > e:
        _fail(f"'a' has {a.shape[0]} groups, the packed weight has {e} experts")
    _check_tensor(masked_m, "masked_m", _I32, 1)
    if masked_m.shape[0] != a.shape[0]:
        _fail(f"'masked_m' has {masked_m.shape[0]} entries, 'a' has {a.shape[0]} groups")
    _check_out(out, (a.shape[0], a.shape[1], n), dtype=dtype)
    return tag


def _check_offsets_args(a, weight, scales, tag, offsets, out):
    tag, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_act(a, "x", dtype, 2)
    if a.shape[1] != k:
        _fail(f"'x' has K = {a.shape[1]}, the packed weight has K = {k}")
    _check_tensor(offsets, "offsets", _I32, 1)
    if offsets.shape[0] != e:
        _fail(f"'offsets' has {offsets.shape[0]} entries, the packed weight has {e} experts")
    _check_out(out, (a.shape[0], n), dtype=dtype)
    return tag


def _check_top_k(top_k):
    if top_k < 1 or top_k > 1024:
        _fail(f"top_k must be in 1..1024, got {top_k}")


def _check_indexed_args(a, weight, scales, tag, sorted_ids, expert_ids, num_tokens_padded, top_k, block_size, out):
    tag, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_act(a, "inputs", dtype, 2)
    if a.shape[1] != k:
        _fail(f"'inputs' has K = {a.shape[1]}, the packed weight has K = {k}")
    _check_top_k(top_k)
    if block_size < 8 or block_size > 1024 or block_size % 8:
        _fail(f"block_size must be a multiple of 8 in 8..1024 (the moe_align_block_size alignment), got {block_size}")
    _check_tensor(sorted_ids, "sorted_ids", _I32, 1)
    _check_tensor(expert_ids, "expert_ids", _I32, 1)
    _check_tensor(num_tokens_padded, "num_tokens_padded", _I32, 1)
    # moe_align_block_size (chord's and vLLM's) makes one expert id per block of sorted ids. The
    # kernel reads block p's expert at expert_ids[p // block_size], so a block_size other than
    # the routing's would run rows on the wrong experts: the count must match exactly.
    blocks = -(-sorted_ids.shape[0] // block_size)
    if expert_ids.shape[0] != blocks:
        _fail(f"'expert_ids' has {expert_ids.shape[0]} entries; {sorted_ids.shape[0]} sorted ids in blocks of "
              f"{block_size} make {blocks}: pass the block_size the routing was aligned with")
    if num_tokens_padded.shape[0] < 1:
        _fail("'num_tokens_padded' is empty")
    _check_out(out, (a.shape[0] * top_k, n), "outputs", dtype)
    return tag


# -- launches (checked; used by the torch ops and by the eager fast path) -----------------

def _launch_contiguous(a, weight, scales, tag, m_indices, out, native=_C):
    tag = _check_contiguous_args(a, weight, scales, tag, m_indices, out)
    dev = _check_device(a, weight, scales, m_indices, out)
    _run_on(dev, native.contiguous, a.data_ptr(), a.shape[0], tag, weight.data_ptr(), scales.data_ptr(),
            m_indices.data_ptr(), out.data_ptr(), _raw_stream(dev))


def _launch_masked(a, weight, scales, tag, masked_m, expected_m, out, native=_C):
    tag = _check_masked_args(a, weight, scales, tag, masked_m, out)
    dev = _check_device(a, weight, scales, masked_m, out)
    _run_on(dev, native.masked, a.data_ptr(), a.shape[0], a.shape[1], tag, weight.data_ptr(), scales.data_ptr(),
            masked_m.data_ptr(), expected_m, out.data_ptr(), _raw_stream(dev))


def _launch_offsets(a, weight, scales, tag, offsets, out, native=_C):
    tag = _check_offsets_args(a, weight, scales, tag, offsets, out)
    dev = _check_device(a, weight, scales, offsets, out)
    _run_on(dev, native.offsets, a.data_ptr(), a.shape[0], tag, weight.data_ptr(), scales.data_ptr(),
            offsets.data_ptr(), out.data_ptr(), _raw_stream(dev))


def _launch_indexed(a, weight, scales, tag, sorted_ids, expert_ids, num_tokens_padded, top_k, block_size, out,
                    native=_C):
    tag = _check_indexed_args(a, weight, scales, tag, sorted_ids, expert_ids, num_tokens_padded, top_k, block_size,
                              out)
    dev = _check_device(a, weight, scales, sorted_ids, expert_ids, num_tokens_padded, out)
    _run_on(dev, native.indexed, a.data_ptr(), a.shape[0], tag, weight.data_ptr(), scales.data_ptr(),
            sorted_ids.data_ptr(), sorted_ids.shape[0], expert_ids.data_ptr(), num_tokens_padded.data_ptr(), top_k,
            block_size, out.data_ptr(), _raw_stream(dev))


def _launch_dequantize(weight, scales, tag, out, native=_C):
    tag, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_out(out, (e, n, k), dtype=dtype)
    dev = _check_device(weight, scales, out)
    _run_on(dev, native.dequantize, tag, weight.data_ptr(), scales.data_ptr(), out.data_ptr(), _raw_stream(dev))


def _src_group(src_format):
    return GROUP_128 if src_format & SRC_GROUP_128 else GROUP_SIZE


def _check_pack_args(src, src_format, scales, weight_out, scales_out):
    """The w4a16_pack op's arguments against each other: the library takes raw pointers and
    writes weight_bytes(E, N, K) / the format's scale bytes through the two outputs, so their
    sizes, the sources' dtypes and shapes are checked here, where the tensors are known.
    Returns (E, N, K)."""
    known = SRC_COMPRESSED | SRC_SCALES_FP16 | SRC_GROUP_128
    if isinstance(src_format, bool) or not isinstance(src_format, int) or src_format < 0 or src_format & ~known:
        _fail(f"'src_format' must be {SRC_CODES} (uint8 codes) or {SRC_COMPRESSED} (compressed-tensors int32), "
              f"optionally OR {SRC_SCALES_FP16} (fp16 scales) and {SRC_GROUP_128} (group 128), got {src_format}")
    dtype = _F16 if src_format & SRC_SCALES_FP16 else _BF16
    group = _src_group(src_format)
    _check_tensor(scales, "scales", dtype, 3)
    e, n, k = scales.shape[0], scales.shape[1], scales.shape[2] * group
    if e < 1 or n % PACK_N or n == 0 or k % PACK_K or k == 0:
        _fail(f"shape E={e} N={n} K={k} is invalid (E >= 1, N a positive multiple of {PACK_N}, K of {PACK_K})")
    if src_format & SRC_COMPRESSED:
        _check_tensor(src, "src", torch.int32, 3)
        want = (e, n, k // 8)
    else:
        _check_tensor(src, "src", _U8, 3)
        want = (e, n, k)
    if tuple(src.shape) != want:
        _fail(f"'src' must have shape {want} for scales of shape {tuple(scales.shape)}, got {tuple(src.shape)}")
    _check_buffer(weight_out, "packed weight", checked_bytes(_C.weight_bytes, e, n, k), e, n, k)
    _check_buffer(scales_out, "packed scales", _INT4_FORMATS[_format_of(dtype, False, group)].buffer_bytes(e, n, k)[1],
                  e, n, k)
    return e, n, k


def _launch_pack(src, src_format, scales, weight_out, scales_out, native=_C):
    e, n, k = _check_pack_args(src, src_format, scales, weight_out, scales_out)
    dev = _check_device(src, scales, weight_out, scales_out)
    tag = _run_on(dev, native.pack, src.data_ptr(), src_format, scales.data_ptr(), e, n, k, weight_out.data_ptr(),
                  scales_out.data_ptr(), _raw_stream(dev))
    want = expected_tag(e, n, k, scales.dtype, group_size=_src_group(src_format))
    if tuple(tag) != want:
        raise RuntimeError(f"chord_kernels: the library packed with tag {tuple(tag)}, expected {want}")


def _launch_pack_zp(src, src_format, scales, zero_points, weight_out, scales_out, native=_C):
    e, n = src.shape[0], src.shape[1]
    k = scales.shape[2] * _src_group(src_format)
    dev = _check_device(src, scales, zero_points, weight_out, scales_out)
    tag = _run_on(dev, native.pack_zp, src.data_ptr(), src_format, scales.data_ptr(), zero_points.data_ptr(), e, n,
                  k, weight_out.data_ptr(), scales_out.data_ptr(), _raw_stream(dev))
    want = expected_tag(e, n, k, scales.dtype, zero_point=True, group_size=_src_group(src_format))
    if tuple(tag) != want:
        raise RuntimeError(f"chord_kernels: the library packed with tag {tuple(tag)}, expected {want}")


# -- torch ops ----------------------------------------------------------------------------

# The operators are defined on a torch.library fragment and implemented for CUDA directly,
# rather than with torch.library.custom_op: a custom_op call goes through Python dispatch
# logic on every call (measured on a CPU op with an empty body, torch 2.11: 17.6 us per call
# against 3.7 us for the same op defined this way). Schemas mark the written tensors (a!), so
# torch.compile functionalizes them as it does a custom_op.
_LIB = torch.library.Library("chord", "FRAGMENT")


def _define_op(schema, launch, fake, lib=_LIB, device="CUDA"):
    """Defines <namespace>::<name> from its schema on `lib`, with `launch` for `device` tensors
    and `fake` (the same checks, no launch) for tracing: torch.compile, FakeTensorMode."""
    name = schema.split("(", 1)[0]

    def fake_none(*args):  # the ops return nothing; the checks' results are not outputs
        fake(*args)

    lib.define(schema)
    lib.impl(name, launch, device)
    torch.library.register_fake(f"{lib.ns}::{name}", fake_none, lib=lib)


_define_op("w4a16_contiguous(Tensor a, Tensor weight, Tensor scales, SymInt[] tag, Tensor m_indices, Tensor(a!) out) -> ()",
           _launch_contiguous, _check_contiguous_args)
_define_op("w4a16_masked(Tensor a, Tensor weight, Tensor scales, SymInt[] tag, Tensor masked_m, SymInt expected_m, "
           "Tensor(a!) out) -> ()",
           _launch_masked, lambda a, weight, scales, tag, masked_m, expected_m, out:
           _check_masked_args(a, weight, scales, tag, masked_m, out))
_define_op("w4a16_offsets(Tensor a, Tensor weight, Tensor scales, SymInt[] tag, Tensor offsets, Tensor(a!) out) -> ()",
           _launch_offsets, _check_offsets_args)
_define_op("w4a16_indexed(Tensor a, Tensor weight, Tensor scales, SymInt[] tag, Tensor sorted_ids, Tensor expert_ids, "
           "Tensor num_tokens_padded, SymInt top_k, SymInt block_size, Tensor(a!) out) -> ()",
           _launch_indexed, _check_indexed_args)


def _fake_dequantize(weight, scales, tag, out):
    _, e, n, k, dtype = _check_tag(tag, weight, scales)
    _check_out(out, (e, n, k), dtype=dtype)


_define_op("w4a16_dequantize(Tensor weight, Tensor scales, SymInt[] tag, Tensor(a!) out) -> ()",
           _launch_dequantize, _fake_dequantize)
_define_op("w4a16_pack(Tensor src, SymInt src_format, Tensor scales, Tensor(a!) weight_out, Tensor(b!) scales_out) -> ()",
           _launch_pack, _check_pack_args)


def _compiling(library=None):
    """True while torch.compile traces the call, which then goes through this package's torch op.
    A call that names another library must not be traced into that op: the raise makes dynamo
    run it outside the graph (through that library), or fail under fullgraph=True."""
    if torch.compiler.is_compiling():
        if library is not None:
            _fail("library= runs eagerly; torch.compile traces the ops of this package's own library")
        return True
    return False


# -- public API ---------------------------------------------------------------------------

def _as_packed_scales(scale, e, n, k, group_size, dtype, packed=GROUP_SIZE):
    if scale.dim() == 2:
        scale = scale.unsqueeze(0)
    if tuple(scale.shape) != (e, n, k // group_size):
        _fail(f"'scale' must have shape {(e, n, k // group_size)} (one scale per {group_size} weights along K), "
              f"got {tuple(scale.shape)}")
    if not scale.is_floating_point():
        _fail(f"'scale' must be floating point, got {scale.dtype}")
    # Scales of another dtype are rounded to `dtype` once here: the layout stores that type.
    source, scale = scale, scale.to(dtype)
    if not torch.compiler.is_compiling():  # a value check reads the tensor: eager packing only
        _check_scale_values(source, scale, dtype)
    # The layout holds one scale per `packed` weights (32, or 128 for the group-128 formats). A
    # coarser group repeats its scale over its packed-wide slices (a copy, no rounding), which
    # gives exactly the same W = dtype((code - 8) * scale).
    if group_size != packed:
        scale = scale.repeat_interleave(group_size // packed, dim=-1)
    return scale.contiguous()


def _check_scale_values(source, scale, dtype, name="scale", axes="(expert, row, group)"):
    """Every scale finite in `dtype`, and none that is not zero rounded to zero: a NaN, an
    infinity or an overflow of the cast (an fp32 scale above 65504 stored as fp16) would make
    every weight of its group wrong without an error. name / axes: the argument and its layout,
    for the message."""
    bad = ~torch.isfinite(scale) | ((scale == 0) & (source != 0))
    if bool(bad.any()):
        at = tuple(int(i) for i in bad.nonzero()[0])
        _fail(f"'{name}' at {axes} {at} is {float(source[at])!r}, which is "
              f"{float(scale[at])!r} in {dtype}: scales must be finite and representable in the packed dtype")


def _as_packed_zero_points(zero_point, e, n, k, group_size, device, packed=GROUP_SIZE):
    """Zero points [E, N, K/group_size] (or [N, K/group_size]), integers 0..15 -> uint8
    [E, N, K/packed], a coarser group repeated over its packed-wide slices (exact, as for the
    scales)."""
    if zero_point.dim() == 2:
        zero_point = zero_point.unsqueeze(0)
    if tuple(zero_point.shape) != (e, n, k // group_size):
        _fail(f"'zero_point' must have shape {(e, n, k // group_size)} (one per scale), got {tuple(zero_point.shape)}")
    if zero_point.is_floating_point() or zero_point.is_complex() or zero_point.dtype == torch.bool:
        _fail(f"'zero_point' must be an integer tensor (uint8, values 0..15), got {zero_point.dtype}")
    if zero_point.device != device:
        _fail(f"'weight' is on {device}, 'zero_point' on {zero_point.device}")
    if zero_point.numel() and (int(zero_point.min()) < 0 or int(zero_point.max()) > 15):
        _fail(f"'zero_point' values must be in 0..15 (unsigned, the codes' domain), got "
              f"{int(zero_point.min())}..{int(zero_point.max())}")
    zero_point = zero_point.to(_U8)
    if group_size != packed:
        zero_point = zero_point.repeat_interleave(group_size // packed, dim=-1)
    return zero_point.contiguous()


def _check_group_size(group_size):
    if isinstance(group_size, bool) or not isinstance(group_size, int):
        _fail(f"'group_size' must be an int, got {type(group_size).__name__}")
    if group_size <= 0 or group_size % GROUP_SIZE:
        _fail(f"'group_size' must be a positive multiple of {GROUP_SIZE} (K for one scale per row), "
              f"got {group_size}")


def pack_w4a16(weight: torch.Tensor, scale: torch.Tensor, group_size: int = GROUP_SIZE, *,
               dtype: torch.dtype = torch.bfloat16, zero_point: Optional[torch.Tensor] = None,
               library=None) -> W4A16Weight:
    """Packs INT4 weights into chord's layout (docs/packed_layout.md), on the GPU.

    weight: codes 0..15 as uint8 (or int32) [E, N, K] / [N, K], or the compressed-tensors
    pack-quantized int32 [E, N, K/8] / [N, K/8] (8 codes per word, least significant
    first). Which one is inferred from the last dimension against K = group_size *
    scale.shape[-1]; int32 words that all hold one nibble (codes under a group_size 8x too
    large) are refused.
    scale: [E, N, K/group_size] / [N, K/group_size] (rounded to `dtype` if not `dtype`).
    group_size: weights per scale along K: 32, or any multiple of 32 that divides K (64 and
    128 as GPTQ and compressed-tensors store them; K itself for one scale per row). A multiple
    of 128 with K % 128 == 0 packs into the group-128 formats (one scale per 128 k: a quarter of
    group 32's scale bytes; group_size of the result 128, repeated per 128 if coarser); another
    group coarser than 32 (64, or channel-wise with K % 128 != 0) is stored as 32-wide groups of
    the same scale. Either way the result is exact.
    dtype: torch.bfloat16 (default) or torch.float16: the dtype the scales are stored in and
    the dtype of the activations and outputs of every operator on the result (the format in
    its tag). Never inferred from `scale`: GPTQ / AWQ checkpoints keep fp16 scales, and
    dtype=torch.float16 serves them without rounding a scale (rounding them to bf16 changes
    about a fifth of the weights).
    The logical weight is W = dtype((code - 8) * scale), rounded once.
    zero_point: None (symmetric: the zero point is 8), or integers 0..15 [E, N, K/group_size] /
    [N, K/group_size], one per scale, unsigned as the codes are (AWQ's and GPTQ v2's stored
    value, GPTQ v1's plus one, compressed-tensors' stored nibble). The logical weight is then
    W = dtype((code - zero_point) * scale): the difference exact, one rounding. The result's
    format is FORMAT_INT4_G32_ZP (bfloat16) or FORMAT_INT4_G32_ZP_FP16 (group 128:
    FORMAT_INT4_G128_ZP / _ZP_FP16; has_zero_point); its scales buffer is twice as large.
    Packed eagerly (not traced by torch.compile).
    library: another build's libchord.so from load_library to pack with (eager calls only;
    every operator takes it).
    """
    native = _native(library)
    fmt_flag = SRC_SCALES_FP16 if _format_of(dtype) == FORMAT_INT4_G32_FP16 else 0
    for t, name in ((weight, "weight"), (scale, "scale"), (zero_point, "zero_point")):
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"chord_kernels: '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if zero_point is not None and _compiling(library):
        _fail("pack_w4a16(..., zero_point=...) runs eagerly: pack before torch.compile traces the model")
    if weight.dim() == 2:
        weight = weight.unsqueeze(0)
    if weight.dim() != 3:
        _fail(f"'weight' must be [E, N, K] codes or [E, N, K/8] int32, got shape {tuple(weight.shape)}")
    _check_group_size(group_size)
    k = (scale.shape[-1] if scale.dim() >= 1 else 0) * group_size
    e, n, last = weight.shape
    if last == k:
        if weight.dtype not in (_U8, torch.int32, torch.int16, torch.int64):
            _fail(f"unpacked codes must be an integer tensor (uint8 preferred), got {weight.dtype}")
        # Codes are nibbles: the pack keeps each one's low 4 bits, so 16 would pack as 0.
        if weight.numel() and not torch.compiler.is_compiling() and \
                (int(weight.min()) < 0 or int(weight.max()) > 15):
            _fail(f"'weight' codes must be in 0..15, got {int(weight.min())}..{int(weight.max())}")
        src = weight.to(_U8).contiguous()
        src_format = SRC_CODES
    elif last * 8 == k:
        if weight.dtype != torch.int32:
            _fail(f"the compressed-tensors form must be int32 [E, N, K/8], got {weight.dtype}")
        # Unpacked int32 codes with a group_size 8x too large have this shape too. Real packed
        # words fill their upper nibbles; words that are all single nibbles, not all zero, are
        # such codes, and packing them as words would be a silently wrong weight. All-zero
        # words pass: vLLM's dummy load leaves int32 parameters as allocated.
        if weight.numel() and not torch.compiler.is_compiling():
            lo, hi = (int(v) for v in torch.aminmax(weight))  # min / max: no weight-sized temporary
            if lo >= 0 and 0 < hi <= 15:
                _fail(f"'weight' int32 [E, N, {last}] holds only values 0..15: unpacked codes, not packed words. "
                      f"With codes, K = {last} and group_size = {last} / scale.shape[-1] (group_size {group_size} "
                      f"gives K = {k})")
        src = weight.contiguous()
        src_format = SRC_COMPRESSED
    else:
        _fail(f"cannot infer the weight form: last dimension {last} is neither K = {k} (codes) nor K/8 = {k // 8} "
              f"(int32 pack-quantized), with K = {group_size} * scale.shape[-1]")
    if n % PACK_N or k % PACK_K or k == 0:
        _fail(f"N = {n} must be a multiple of {PACK_N} and K = {k} a positive multiple of {PACK_K}")
    packed = packed_group(group_size, k)
    scales = _as_packed_scales(scale, e, n, k, group_size, dtype, packed)
    src_format |= fmt_flag
    if packed == GROUP_128:
        src_format |= SRC_GROUP_128
    if scales.device != src.device:
        _fail(f"'weight' is on {src.device}, 'scale' on {scales.device}")
    weight_out = torch.empty(checked_bytes(native.weight_bytes, e, n, k), dtype=_U8, device=src.device)
    tag = expected_tag(e, n, k, dtype, zero_point=zero_point is not None, group_size=group_size)
    if packed == GROUP_128:
        scale_bytes = native.format_scale_bytes(tag[1], e, n, k)
        if scale_bytes < 0:
            _fail(f"shape E={e} N={n} K={k} is out of the packed layout's range (format_scale_bytes)")
    elif zero_point is not None:
        scale_bytes = checked_bytes(native.zp_scale_bytes, e, n, k)
    else:
        scale_bytes = checked_bytes(native.scale_bytes, e, n, k)
    scales_out = torch.empty(scale_bytes, dtype=_U8, device=src.device)
    if zero_point is not None:
        zps = _as_packed_zero_points(zero_point, e, n, k, group_size, src.device, packed)
        _launch_pack_zp(src, src_format, scales, zps, weight_out, scales_out, native)
        return W4A16Weight(weight_out, scales_out, tag)
    if _compiling(library):
        torch.ops.chord.w4a16_pack(src, src_format, scales, weight_out, scales_out)
    else:
        _launch_pack(src, src_format, scales, weight_out, scales_out, native)
    return W4A16Weight(weight_out, scales_out, tag)


def pack_w4a16_grouped(weight: torch.Tensor, scale: torch.Tensor, mode: str = "indexed",
                       group_size: int = GROUP_SIZE, *, dtype: torch.dtype = torch.bfloat16,
                       zero_point: Optional[torch.Tensor] = None, library=None) -> W4A16Weight:
    """pack_w4a16 for a grouped GEMM mode. One layout serves every mode, so the result is
    the same for each; `mode` is checked so that a caller asking for an unknown mode learns
    it here rather than at the first GEMM."""
    if mode not in MODES:
        _fail(f"unknown mode '{mode}'; chord's packed layout serves {', '.join(MODES)}")
    return pack_w4a16(weight, scale, group_size, dtype=dtype, zero_point=zero_point, library=library)


def _packed(packed):
    if not isinstance(packed, W4A16Weight):
        raise TypeError(f"chord_kernels: expected a W4A16Weight from pack_w4a16, got {type(packed).__name__}")
    return packed


def _leading(t, name, dim):
    """The shape of activation `t`, which must be a `dim`-dimensional tensor: the operators size
    their outputs from it before the launch checks run."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"chord_kernels: '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != dim:
        _fail(f"'{name}' must have {dim} dimensions, got shape {tuple(t.shape)}")
    return tuple(t.shape)


def _tag_dims(tag, label, check):
    """(E, N, K) of a packed weight of the family `label` (a _PackedFormat's: INT4 or NF4) whose
    tag has passed `check`, its format's tag and buffer checks (a dict lookup once a tag has
    passed under that family): the operators size their outputs from it, so a foreign or
    damaged tag is a ValueError before anything is allocated. While torch.compile traces, the
    tag's fields as they are: the traced op's fake checks the tag, and the library's size
    helpers cannot be traced."""
    if torch.compiler.is_compiling():
        return tuple(tag[4:7])
    key = (label, tag if type(tag) is tuple else tuple(tag))
    known = _checked_tags.get(key)
    if known is None:
        check()
        known = _checked_tags[key]
    return known[:3]


def _dims(p):
    return _tag_dims(p.tag, _INT4_LABEL, lambda: _check_tag(p.tag, p.weight, p.scales))


def dequantize(packed: W4A16Weight, *, library=None) -> torch.Tensor:
    """The logical weight T [E, N, K] = T((code - 8) * scale) of a packed weight, T = packed.dtype
    (bfloat16, or float16 for a weight packed with dtype=torch.float16); with zero points
    T((code - zero_point) * scale)."""
    p = _packed(packed)
    out = torch.empty(_dims(p), dtype=p.dtype, device=p.weight.device)
    if _compiling(library):
        torch.ops.chord.w4a16_dequantize(p.weight, p.scales, p.tag, out)
    else:
        _launch_dequantize(p.weight, p.scales, p.tag, out, _native(library))
    return out


def contiguous(a: torch.Tensor, packed: W4A16Weight, m_indices: torch.Tensor,
               outputs: Optional[torch.Tensor] = None, *, library=None) -> torch.Tensor:
    """Grouped GEMM, contiguous layout: a [m, K] in packed.dtype (bfloat16, or float16 for a
    weight packed with dtype=torch.float16; so are the outputs of every mode); m_indices int32
    [m] (expert of each row, -1 = padding row; each expert's segment starts at a multiple of
    contiguous_alignment()). Returns [m, N]; padding rows are left untouched."""
    p = _packed(packed)
    if outputs is None:
        outputs = torch.empty((_leading(a, "a", 2)[0], _dims(p)[1]), dtype=p.dtype, device=a.device)
    if _compiling(library):
        torch.ops.chord.w4a16_contiguous(a, p.weight, p.scales, p.tag, m_indices, outputs)
    else:
        _launch_contiguous(a, p.weight, p.scales, p.tag, m_indices, outputs, _native(library))
    return outputs


def masked(a: torch.Tensor, packed: W4A16Weight, masked_m: torch.Tensor, expected_m: int,
           outputs: Optional[torch.Tensor] = None, *, library=None) -> torch.Tensor:
    """Grouped GEMM, masked layout: a [G, max_m, K] (packed.dtype); masked_m int32 [G] (valid rows of
    group g, which uses expert g); expected_m: host hint, the mean rows per group (<= 0: max_m); it
    picks the config and sizes the grid, whose CTAs take the groups' rows in turn, so a low hint
    costs time, never rows. Returns [G, max_m, N]; rows past masked_m[g] are left untouched."""
    p = _packed(packed)
    if outputs is None:
        outputs = torch.empty(_leading(a, "a", 3)[:2] + (_dims(p)[1],), dtype=p.dtype, device=a.device)
    expected_m = int(expected_m)
    if _compiling(library):
        torch.ops.chord.w4a16_masked(a, p.weight, p.scales, p.tag, masked_m, expected_m, outputs)
    else:
        _launch_masked(a, p.weight, p.scales, p.tag, masked_m, expected_m, outputs, _native(library))
    return outputs


def offsets(x: torch.Tensor, packed: W4A16Weight, offs: torch.Tensor,
            outputs: Optional[torch.Tensor] = None, *, library=None) -> torch.Tensor:
    """Grouped GEMM, torch._grouped_mm convention: x [S, K] (packed.dtype) sorted by expert;
    offs int32 [E] cumulative end rows (offs[E-1] <= S). Returns [S, N]; rows past
    offs[E-1] are left untouched."""
    p = _packed(packed)
    if outputs is None:
        outputs = torch.empty((_leading(x, "x", 2)[0], _dims(p)[1]), dtype=p.dtype, device=x.device)
    if _compiling(library):
        torch.ops.chord.w4a16_offsets(x, p.weight, p.scales, p.tag, offs, outputs)
    else:
        _launch_offsets(x, p.weight, p.scales, p.tag, offs, outputs, _native(library))
    return outputs


def grouped_mm(x: torch.Tensor, offs: torch.Tensor, w: W4A16Weight,
               outputs: Optional[torch.Tensor] = None, *, library=None) -> torch.Tensor:
    """torch._grouped_mm(x, W^T, offs=offs) with W the packed weight (argument order of
    the torch function: activations, offsets, weights)."""
    return offsets(x, w, offs, outputs, library=library)


def indexed(inputs: torch.Tensor, packed: W4A16Weight, sorted_ids: torch.Tensor, expert_ids: torch.Tensor,
            num_tokens_padded: torch.Tensor, top_k: int, outputs: Optional[torch.Tensor] = None, *,
            block_size: int, library=None) -> torch.Tensor:
    """Grouped GEMM on vLLM's moe_align_block_size routing.

    inputs [M, K] (packed.dtype); sorted_ids int32 [capacity] route ids (token * top_k + k; ids >=
    M * top_k are padding); expert_ids int32 [ceil(capacity / block_size)] (-1 = expert
    not on this rank); num_tokens_padded int32 [1]; block_size: the alignment the routing
    was built with. Row id of a route reads inputs[id // top_k] (down projection: top_k = 1
    with inputs [M * top_k, K]). Returns [M * top_k, N]; only valid routes' rows are
    written.
    """
    p = _packed(packed)
    top_k = int(top_k)
    block_size = int(block_size)
    if outputs is None:
        _check_top_k(top_k)  # before the output is sized from it
        outputs = torch.empty((_leading(inputs, "inputs", 2)[0] * top_k, _dims(p)[1]), dtype=p.dtype,
                              device=inputs.device)
    if _compiling(library):
        torch.ops.chord.w4a16_indexed(inputs, p.weight, p.scales, p.tag, sorted_ids, expert_ids, num_tokens_padded,
                                      top_k, block_size, outputs)
    else:
        _launch_indexed(inputs, p.weight, p.scales, p.tag, sorted_ids, expert_ids, num_tokens_padded, top_k,
                        block_size, outputs, _native(library))
    return outputs


def contiguous_alignment(*, library=None) -> int:
    return int(_native(library).contiguous_alignment())


def tuning_table_json(arch: Optional[str], experts: int, n: int, k: int, top_k: int, *,
                      library=None) -> Optional[str]:
    """The library's measured tuning table for an (E, N, K) layer on `arch` ("sm_90a"; None =
    "sm_90a") as JSON rows [[min_m, max_m, config], ...] with M in tokens (top_k routes each),
    or None when no table holds the shape. ValueError for an unknown arch or bad sizes."""
    return _native(library).tuning_json(arch, experts, n, k, top_k)


def last_w4a16_kernel(*, library=None) -> Optional[str]:
    """The kernel that served this thread's last W4A16 GEMM call (any mode, INT4 or NF4), named
    as `chord config` names it: the tile the call ran, which the decode tile search may have
    chosen over the rule's. None before the thread's first call."""
    return _native(library).last_kernel()


def jit_stats(*, library=None) -> dict:
    return dict(_native(library).jit_stats())

