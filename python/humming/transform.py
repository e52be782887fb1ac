"""Load time: a layer's humming-form tensors -> chord's packed layout and the LayerConfig
that every forward call takes. Everything chord cannot compute is refused here (or when
the schema is built), never in a forward call."""
from typing import Dict, Optional, Tuple

import torch

import chord_kernels
from chord_kernels.checkpoint import GPTQ_V1_SYMMETRIC_ZEROS, GPTQ_V2_SYMMETRIC_ZEROS
from humming import dtypes
from humming.config import LayerConfig, WeightScaleType
from humming.schema.base import check_param_dtype, check_scale_dtype, unsupported
from humming.schema.humming import HummingInputSchema, HummingWeightSchema
from humming.utils.weight import scale_group, unpack_zero_point


def _check_symmetric_zero_point(zp):
    """vLLM's HummingLinearKernel hands every layer's zero-point parameter, a symmetric GPTQ
    layer's qzeros too, with has_zero_point=False; the schema decides and the tensor is not
    read, as in humming and vLLM's other kernels. Only GPTQ's symmetric constant is taken
    that way (one load-time read): other values under a symmetric schema would be a zero
    point the layer drops, so they are refused."""
    if not isinstance(zp, torch.Tensor) or zp.dtype != torch.int32:
        raise unsupported(f"tensor 'zero_point' ({getattr(zp, 'dtype', type(zp).__name__)}) with a schema that has "
                          f"no zero point (has_zero_point=False)")
    if zp.device.type == "meta":
        raise ValueError("humming (chord backend): 'zero_point' is a meta tensor: its values are needed to check that "
                         "it is the symmetric constant")
    if zp.numel() and not any(bool((zp == word).all()) for word in (GPTQ_V1_SYMMETRIC_ZEROS, GPTQ_V2_SYMMETRIC_ZEROS)):
        raise unsupported("tensor 'zero_point' other than GPTQ's symmetric constant (0x77777777 or 0x88888888 in "
                          "every word) with a schema that has no zero point (has_zero_point=False)")


def prepare_and_transform_humming_tensors(
    tensors: Dict[str, torch.Tensor],
    shape_n: int,
    shape_k: int,
    weight_schema: HummingWeightSchema,
    input_schema: Optional[HummingInputSchema] = None,
    pad_n_to_multiple: int = 1,
    pad_k_to_multiple: int = 1,
    has_bias: bool = False,
    num_experts: Optional[int] = None,
    torch_dtype: Optional[torch.dtype] = None,
    device: Optional[torch.device] = None,
    **kwargs,
) -> Tuple[LayerConfig, Dict[str, torch.Tensor]]:
    """tensors: "weight" int32 [E, N, K/8] (or [N, K/8]) of uint4 codes, 8 per word along K,
    least significant first, "weight_scale" [E, N, K/group] (the schema's group; [E, N, 1]
    channel-wise), and with the schema's has_zero_point "zero_point" int32 [E, N/8, K/group]
    (zero points 0..15 packed along N). Returns the LayerConfig and
    {"weight", "weight_scale"}: chord's packed buffers (uint8, experts first; the zero points
    live in the scales buffer, so no zero_point tensor is handed back and none is passed to a
    forward call). Padding requests are met without padding (chord needs N % 16 == 0 and
    K % 64 == 0).

    torch_dtype (the model dtype, vLLM's params_dtype; default bfloat16) is the dtype of the
    layer's activations and outputs and of the packed scales: bfloat16 packs chord's bf16
    format, float16 its fp16 one (FORMAT_INT4_G32_FP16, or FORMAT_INT4_G32_ZP_FP16 with zero
    points), the scales rounded once to it (fp16 GPTQ / AWQ scales are kept bit for bit).
    The LayerConfig's a_dtype, c_dtype and bs_dtype name it; forward calls must pass it."""
    del pad_n_to_multiple, pad_k_to_multiple, kwargs
    torch_dtype = check_param_dtype(torch_dtype or torch.bfloat16)
    model_dtype = dtypes.DataType.from_torch_dtype(torch_dtype)
    if not isinstance(weight_schema, HummingWeightSchema):
        raise TypeError(f"humming (chord backend): prepare_and_transform_humming_tensors needs a "
                        f"HummingWeightSchema (convert_humming first), got {type(weight_schema).__name__}")
    weight_schema.check_supported()
    check_scale_dtype(weight_schema.bs_dtype, torch_dtype)
    input_schema = input_schema or HummingInputSchema()
    if not isinstance(input_schema, HummingInputSchema):
        raise unsupported(f"input schema {type(input_schema).__name__}")
    if input_schema.a_dtype is not None and input_schema.a_dtype != model_dtype:
        raise ValueError(f"humming (chord backend): the input schema's activation type {input_schema.a_dtype} is not "
                         f"the model dtype {torch_dtype}; chord runs a layer's activations, outputs and scales in "
                         f"one dtype (torch_dtype)")
    if has_bias or tensors.get("bias") is not None:
        raise unsupported("a bias")
    for name in ("weight_scale_2", "input_scale", "input_scale_2"):
        if tensors.get(name) is not None:
            raise unsupported(f"tensor '{name}'")
    if tensors.get("zero_point") is not None and not weight_schema.has_zero_point:
        _check_symmetric_zero_point(tensors["zero_point"])
    if shape_n % chord_kernels.PACK_N or shape_k % chord_kernels.PACK_K or shape_n <= 0 or shape_k <= 0:
        raise unsupported(f"shape N={shape_n} K={shape_k} (chord needs N % 16 == 0 and K % 64 == 0)")
    for name in ("weight", "weight_scale"):
        if name not in tensors:
            raise ValueError(f"humming (chord backend): tensor '{name}' is missing; got {sorted(tensors)}")
        if not isinstance(tensors[name], torch.Tensor):
            raise TypeError(f"humming (chord backend): '{name}' must be a torch.Tensor, got "
                            f"{type(tensors[name]).__name__}")
    weight, scale = tensors["weight"], tensors["weight_scale"]
    e = num_experts or 1
    lead = (num_experts,) if num_experts else ()
    if weight.dtype != torch.int32 or tuple(weight.shape) != lead + (shape_n, shape_k // 8):
        raise ValueError(f"humming (chord backend): 'weight' must be int32 {lead + (shape_n, shape_k // 8)}, got "
                         f"{weight.dtype} {tuple(weight.shape)}")
    group = scale_group(weight_schema.group_size, shape_k)
    if tuple(scale.shape) != lead + (shape_n, shape_k // group):
        raise ValueError(f"humming (chord backend): 'weight_scale' must have shape "
                         f"{lead + (shape_n, shape_k // group)}, got {tuple(scale.shape)}")
    zero_point = None  # a symmetric schema's zero_point (checked above) is not read
    if weight_schema.has_zero_point:
        zp = tensors.get("zero_point")
        if zp is None:
            raise ValueError("humming (chord backend): the schema has zero points but tensor 'zero_point' is missing")
        if zp.dtype != torch.int32 or tuple(zp.shape) != lead + (shape_n // 8, shape_k // group):
            raise ValueError(f"humming (chord backend): 'zero_point' must be int32 "
                             f"{lead + (shape_n // 8, shape_k // group)} (packed along N), got {zp.dtype} "
                             f"{tuple(zp.shape)}")
        zero_point = unpack_zero_point(zp.reshape(e, shape_n // 8, shape_k // group))
    # A zero point of 8 everywhere is the symmetric weight: packed as such (every engine).
    if zero_point is not None and bool((zero_point == 8).all()):
        zero_point = None
    packed, index = _pack(weight.reshape(e, shape_n, shape_k // 8), scale.reshape(e, shape_n, shape_k // group), group,
                          zero_point, torch_dtype, device)
    if packed.dtype != torch_dtype:
        raise RuntimeError(f"humming (chord backend): packed for {packed.dtype}, the layer's dtype is {torch_dtype}")
    config = LayerConfig(
        a_dtype=model_dtype, b_dtype=dtypes.uint4, c_dtype=model_dtype, bs_dtype=model_dtype, shape_n=shape_n,
        shape_k=shape_k, num_experts=num_experts or 0, weight_scale_group_size=weight_schema.group_size,
        weight_scale_type=weight_schema.weight_scale_type,
        has_zero_point=packed.has_zero_point, device_index=index, packed_tag=tuple(packed.tag))
    # Experts stay the first dimension: callers check weight.size(0) == E.
    out = {"weight": packed.weight.view(e, -1) if num_experts else packed.weight,
           "weight_scale": packed.scales.view(e, -1) if num_experts else packed.scales}
    return config, out


def _pack(weight: torch.Tensor, scale: torch.Tensor, group: int, zero_point: Optional[torch.Tensor],
          dtype: torch.dtype, device) -> Tuple[chord_kernels.W4A16Weight, int]:
    """chord's packed weight ([E, N, K/8] int32 codes, [E, N, K/group] scales, zero points
    0..15 [E, N, K/group] or None) in `dtype` on the CUDA device (None: the weight's, else the
    current one), and that device's index."""
    if device is None:
        device = weight.device if weight.is_cuda else torch.device("cuda", torch.cuda.current_device())
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"humming (chord backend): chord packs and runs on a CUDA device, got {device}")
    index = device.index if device.index is not None else torch.cuda.current_device()
    device = torch.device("cuda", index)
    with torch.cuda.device(index):
        packed = chord_kernels.pack_w4a16(weight.to(device), scale.to(device), group_size=group, dtype=dtype,
                                          zero_point=None if zero_point is None else zero_point.to(device))
    return packed, index


__all__ = ["prepare_and_transform_humming_tensors"]
