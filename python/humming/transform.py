"""Load time: a layer's humming-form tensors -> chord's packed layout and the LayerConfig
that every forward call takes. Everything chord cannot compute is refused here (or when
the schema is built), never in a forward call."""
from typing import Dict, Optional, Tuple

import torch

import chord_kernels
from humming import dtypes
from humming.config import LayerConfig, WeightScaleType
from humming.schema.base import check_param_dtype, unsupported
from humming.schema.humming import HummingInputSchema, HummingWeightSchema
from humming.utils.weight import scale_group, unpack_zero_point


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
    K % 64 == 0)."""
    del pad_n_to_multiple, pad_k_to_multiple, kwargs
    torch_dtype = torch_dtype or torch.bfloat16
    check_param_dtype(torch_dtype)
    if not isinstance(weight_schema, HummingWeightSchema):
        raise TypeError(f"humming (chord backend): prepare_and_transform_humming_tensors needs a "
                        f"HummingWeightSchema (convert_humming first), got {type(weight_schema).__name__}")
    weight_schema.check_supported()
    input_schema = input_schema or HummingInputSchema()
    if not isinstance(input_schema, HummingInputSchema):
        raise unsupported(f"input schema {type(input_schema).__name__}")
    if has_bias or tensors.get("bias") is not None:
        raise unsupported("a bias")
    for name in ("weight_scale_2", "input_scale", "input_scale_2"):
        if tensors.get(name) is not None:
            raise unsupported(f"tensor '{name}'")
    if tensors.get("zero_point") is not None and not weight_schema.has_zero_point:
        raise unsupported("tensor 'zero_point' with a schema that has no zero point (has_zero_point=False)")
    if shape_n % chord_kernels.PACK_N or shape_k % chord_kernels.PACK_K or shape_n <= 0 or shape_k <= 0:
        raise unsupported(f"shape N={shape_n} K={shape_k} (chord needs N % 16 == 0 and K % 64 == 0)")
    for name in ("weight", "weight_scale"):
        if name not in tensors:
            raise ValueError(f"humming (chord backend): tensor '{name}' is missing; got {sorted(tensors)}")
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
    zero_point = None
    if weight_schema.has_zero_point:
        zp = tensors.get("zero_point")
        if zp is None:
            raise ValueError("humming (chord backend): the schema has zero points but tensor 'zero_point' is missing")
        if zp.dtype != torch.int32 or tuple(zp.shape) != lead + (shape_n // 8, shape_k // group):
            raise ValueError(f"humming (chord backend): 'zero_point' must be int32 "
                             f"{lead + (shape_n // 8, shape_k // group)} (packed along N), got {zp.dtype} "
                             f"{tuple(zp.shape)}")
        zero_point = unpack_zero_point(zp.reshape(e, shape_n // 8, shape_k // group))
    if device is None:
        device = weight.device if weight.is_cuda else torch.device("cuda", torch.cuda.current_device())
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"humming (chord backend): chord packs and runs on a CUDA device, got {device}")
    index = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(index):
        # A zero point of 8 everywhere is the symmetric weight: packed as such (every engine).
        if zero_point is not None and bool((zero_point == 8).all()):
            zero_point = None
        packed = chord_kernels.pack_w4a16(weight.to(device).reshape(e, shape_n, shape_k // 8),
                                          scale.to(device).reshape(e, shape_n, shape_k // group), group_size=group,
                                          zero_point=None if zero_point is None else zero_point.to(device))
    f16 = dtypes.DataType.from_torch_dtype(torch_dtype)
    config = LayerConfig(
        a_dtype=f16, b_dtype=dtypes.uint4, c_dtype=f16, bs_dtype=dtypes.bfloat16, shape_n=shape_n, shape_k=shape_k,
        num_experts=num_experts or 0, weight_scale_group_size=weight_schema.group_size,
        weight_scale_type=weight_schema.weight_scale_type,
        has_zero_point=packed.has_zero_point, device_index=index, packed_tag=tuple(packed.tag))
    # Experts stay the first dimension: callers check weight.size(0) == E.
    out = {"weight": packed.weight.view(e, -1) if num_experts else packed.weight,
           "weight_scale": packed.scales.view(e, -1) if num_experts else packed.scales}
    return config, out


__all__ = ["prepare_and_transform_humming_tensors"]
