"""NF4 experts from a bitsandbytes checkpoint: the state dict that a bitsandbytes 4-bit
Linear saves (what transformers writes to safetensors for a `load_in_4bit` model), read into
the NF4QuantState that NF4Weights packs.

For a weight named W the state dict holds:
- W: the codes, uint8 [N*K/2, 1] (another `quant_storage` dtype holds the same bytes);
- W.absmax: FP32 [blocks], or uint8 [blocks] when the absmax is double-quantized;
- W.quant_map: FP32 [16], the 4-bit code table;
- W.nested_absmax FP32 [ceil(blocks / 256)] and W.nested_quant_map FP32 [256] (double
  quantization);
- W.quant_state.bitsandbytes__nf4: uint8, the UTF-8 JSON of quant_type, blocksize, dtype,
  shape [N, K] and, double-quantized, nested_blocksize, nested_dtype and nested_offset.

MoE checkpoints store one Linear per expert and projection, each with its own statistics
(its own offset and nested absmax), while chord's layout holds one FP32 absmax per block.
So each weight's absmax is resolved to FP32 here as bitsandbytes' dequantize_4bit resolves
it (code[q] * nested absmax + offset, two FP32 roundings), which keeps the dequantized
weights bit for bit. Weights named together for one expert (gate and up) are stacked along
N, as the fused gate_up GEMM reads them.

Everything read is checked against the format, and anything chord would compute differently
is refused with the reason: another quant_type (fp4), blocksize or code table, mismatched
shapes, sizes or dtypes. Reading happens at load time: it reads the JSON and compares the
code table on the host.
"""
import json
from typing import Any, List, Mapping, Sequence, Tuple, Union

import torch

from ._ops import _fail
from .nf4 import NF4_BLOCK_SIZE, NF4_NESTED_BLOCK_SIZE, NF4QuantState, NF4Weights, _constant, fp32_offset, resolve_absmax

_QS_KEY = ".quant_state.bitsandbytes__"
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

Names = Sequence[Union[str, Sequence[str]]]


def _tensor(state_dict: Mapping[str, Any], key: str) -> torch.Tensor:
    if key not in state_dict:
        _fail(f"bitsandbytes state dict: '{key}' is missing")
    t = state_dict[key]
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"chord_kernels: bitsandbytes state dict: '{key}' must be a torch.Tensor, got "
                        f"{type(t).__name__}")
    return t


def _meta(state_dict: Mapping[str, Any], name: str) -> dict:
    """The JSON item; quant types other than nf4 are refused by name. Looked up by key, not by
    a scan: a model's state dict has hundreds of thousands of keys."""
    key = name + _QS_KEY + "nf4"
    if key not in state_dict:
        if name + _QS_KEY + "fp4" in state_dict:
            raise NotImplementedError(f"chord_kernels: '{name}' is stored as quant_type fp4; only nf4 is supported")
        _fail(f"bitsandbytes state dict: '{key}' is missing (is '{name}' a bitsandbytes 4-bit weight?)")
    raw = _tensor(state_dict, key)
    if raw.dtype != torch.uint8 or raw.dim() != 1:
        _fail(f"bitsandbytes state dict: '{key}' must be a 1-D uint8 tensor (UTF-8 JSON), got {raw.dtype} "
              f"{tuple(raw.shape)}")
    try:
        meta = json.loads(bytes(raw.cpu().tolist()).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        _fail(f"bitsandbytes state dict: '{key}' is not UTF-8 JSON ({type(e).__name__})")
    if not isinstance(meta, dict):
        _fail(f"bitsandbytes state dict: '{key}' must hold a JSON object, got {type(meta).__name__}")
    return meta


def _field(meta: dict, name: str, field: str, kind, allowed=None):
    """A field of the JSON item: of JSON type `kind` (else malformed: ValueError), and one of
    `allowed` when given (else a form chord does not read: NotImplementedError)."""
    if field not in meta:
        _fail(f"bitsandbytes state dict: the quant state of '{name}' has no '{field}'")
    value = meta[field]
    if isinstance(value, bool) or not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        _fail(f"bitsandbytes state dict: the quant state of '{name}' is malformed: {field} {value!r} is not a "
              f"{' or '.join(k.__name__ for k in kinds)}")
    if allowed is not None and value not in allowed:
        raise NotImplementedError(f"chord_kernels: '{name}' has {field} {value!r}; chord reads {field} "
                                  f"{' or '.join(repr(a) for a in allowed)}")
    return value


def _sized(state_dict: Mapping[str, Any], key: str, dtype: torch.dtype, numel: int) -> torch.Tensor:
    """The tensor under `key`, flattened, if it is `dtype` with `numel` elements."""
    t = _tensor(state_dict, key)
    if t.dtype != dtype or t.numel() != numel:
        _fail(f"bitsandbytes state dict: '{key}' must be {dtype} with {numel} elements, got {t.dtype} "
              f"{tuple(t.shape)}")
    return t.reshape(-1)


def _read_one(state_dict: Mapping[str, Any], name: str) -> Tuple[torch.Tensor, torch.Tensor, int, int, torch.dtype]:
    """One weight: (codes uint8 [N*K/2], FP32 absmax [N*K/64], N, K, dtype)."""
    meta = _meta(state_dict, name)
    _field(meta, name, "quant_type", str, ("nf4",))
    _field(meta, name, "blocksize", int, (NF4_BLOCK_SIZE,))
    dtype = _DTYPES[_field(meta, name, "dtype", str, tuple(_DTYPES))]
    shape = _field(meta, name, "shape", list)
    if not (len(shape) == 2 and all(isinstance(s, int) and not isinstance(s, bool) and 0 < s < 2**31 for s in shape)):
        _fail(f"bitsandbytes state dict: '{name}' must be a 2-D weight [N, K], its shape is {shape!r}")
    n, k = shape
    if k % NF4_BLOCK_SIZE:
        _fail(f"bitsandbytes state dict: '{name}' has K = {k}; chord needs K a multiple of {NF4_BLOCK_SIZE}")
    blocks = n * k // NF4_BLOCK_SIZE

    codes = _tensor(state_dict, name)
    if not codes.is_contiguous() or codes.numel() * codes.element_size() != n * k // 2:
        _fail(f"bitsandbytes state dict: '{name}' must hold {n * k // 2} contiguous bytes (N*K/2 codes), got "
              f"{codes.dtype} {tuple(codes.shape)}")
    codes = codes.reshape(-1).view(torch.uint8)
    device = codes.device

    table = _sized(state_dict, name + ".quant_map", torch.float32, 16)
    if not torch.equal(table.to(device).view(torch.int32), _constant("table", device).view(torch.int32)):
        _fail(f"bitsandbytes state dict: '{name}.quant_map' is not the NF4 code table; chord decodes with the "
              "standard table only")

    # bitsandbytes writes the nested fields into the JSON exactly when it saves nested tensors.
    nested = "nested_offset" in meta
    absmax_key = name + ".absmax"
    if not nested:
        if name + ".nested_absmax" in state_dict:
            _fail(f"bitsandbytes state dict: '{name}.nested_absmax' is there but the quant state of '{name}' has "
                  "no nested fields")
        absmax = _sized(state_dict, absmax_key, torch.float32, blocks)
        return codes, absmax.to(device), n, k, dtype
    _field(meta, name, "nested_blocksize", int, (NF4_NESTED_BLOCK_SIZE,))
    _field(meta, name, "nested_dtype", str, ("float32",))
    offset = fp32_offset(_field(meta, name, "nested_offset", (int, float)), f"bitsandbytes state dict: '{name}' nested_offset")
    state = NF4QuantState(
        packed=codes,
        absmax=_sized(state_dict, absmax_key, torch.uint8, blocks).to(device),
        shape=(1, n, k),
        nested_absmax=_sized(state_dict, name + ".nested_absmax", torch.float32,
                             -(-blocks // NF4_NESTED_BLOCK_SIZE)).to(device),
        nested_code=_sized(state_dict, name + ".nested_quant_map", torch.float32, 256).to(device),
        # As bitsandbytes' QuantState.from_dict restores it: a 0-dim FP32 tensor.
        offset=torch.tensor(offset, dtype=torch.float32, device=device),
        dtype=dtype)
    return codes, resolve_absmax(state), n, k, dtype


def read_bitsandbytes(state_dict: Mapping[str, Any], names: Names) -> NF4QuantState:
    """The NF4QuantState of experts [E, N, K] (FP32 absmax) from a bitsandbytes state dict.

    names: one entry per expert, each a weight name or a list / tuple of names stacked along N
    (for example (gate_proj, up_proj) for a fused gate_up GEMM); no name twice. Every expert
    must come out with the same N, K and dtype, and every weight's codes on one device (its
    statistics are moved to it)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"chord_kernels: 'state_dict' must be a mapping of names to tensors, got "
                        f"{type(state_dict).__name__}")
    if not isinstance(names, (list, tuple)) or len(names) == 0:
        raise TypeError("chord_kernels: 'names' must be a non-empty list or tuple with one entry per expert (a "
                        "weight name, or a list / tuple of names stacked along N)")
    codes: List[torch.Tensor] = []
    absmax: List[torch.Tensor] = []
    seen = set()
    expert_shape = None
    dtype = None
    for e, entry in enumerate(names):
        parts = [entry] if isinstance(entry, str) else list(entry) if isinstance(entry, (list, tuple)) else None
        if not parts or not all(isinstance(p, str) for p in parts):
            raise TypeError(f"chord_kernels: names[{e}] must be a weight name or a non-empty list / tuple of names, "
                            f"got {entry!r}")
        n_total, k_expert = 0, None
        for part in parts:
            if part in seen:
                _fail(f"bitsandbytes state dict: '{part}' is named twice in 'names'")
            seen.add(part)
            c, a, n, k, part_dtype = _read_one(state_dict, part)
            if k_expert is not None and k != k_expert:
                _fail(f"bitsandbytes state dict: names[{e}] stacks weights with different K ({k_expert} and {k})")
            if dtype is not None and part_dtype != dtype:
                _fail(f"bitsandbytes state dict: '{part}' is {part_dtype}, the weights before it {dtype}")
            if codes and c.device != codes[0].device:
                _fail(f"bitsandbytes state dict: '{part}' is on {c.device}, the weights before it on "
                      f"{codes[0].device}")
            k_expert, dtype = k, part_dtype
            n_total += n
            codes.append(c)
            absmax.append(a)
        if expert_shape is not None and (n_total, k_expert) != expert_shape:
            _fail(f"bitsandbytes state dict: expert {e} is [{n_total}, {k_expert}], expert 0 is "
                  f"[{expert_shape[0]}, {expert_shape[1]}]")
        expert_shape = (n_total, k_expert)
    n, k = expert_shape
    return NF4QuantState(packed=torch.cat(codes), absmax=torch.cat(absmax), shape=(len(names), n, k), dtype=dtype)


def from_bitsandbytes(state_dict: Mapping[str, Any], names: Names, *, keep_state: bool = False,
                      library=None) -> NF4Weights:
    """NF4Weights packed from a bitsandbytes state dict (read_bitsandbytes), on the CUDA
    device the tensors are on."""
    return NF4Weights(quant_state=read_bitsandbytes(state_dict, names), keep_state=keep_state, library=library)
