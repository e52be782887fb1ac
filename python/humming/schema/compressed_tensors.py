"""compressed-tensors checkpoints: the pack-quantized INT4 scheme, symmetric or not, group
strategy (group size a multiple of 32) or channel strategy.

Tensors per layer: weight_packed int32 [N, K/8] (8 codes per word, element j in bits
4j..4j+3, value + 8), weight_scale [N, K/group] ([N, 1] channel-wise), weight_shape int64
[2]; asymmetric (symmetric: false) adds weight_zero_point int32 [N/8, K/group] packed along N
(stored zp + 8: the codes' unsigned zero point), which is the humming form's zero_point. That
word order is what chord's packer reads (src_format 1), so the conversion only renames.
"""
import dataclasses
from typing import Any, Optional

import torch

from humming import dtypes
from humming.schema.base import (BaseInputSchema, BaseWeightSchema, add_expert_dim, check_param_dtype, config_flag,
                                  config_int, keep_bias, require_tensors, unsupported)
from humming.schema.humming import HummingInputSchema, HummingWeightSchema, int4_tensor_attrs
from humming.utils.weight import GROUP_SIZE, scale_group


@dataclasses.dataclass(kw_only=True)
class CompressedTensorsWeightSchema(BaseWeightSchema):
    quant_method: str = "compressed-tensors"
    format: Optional[str] = None
    type: str = "int"
    num_bits: int = 4
    strategy: str = "group"
    symmetric: bool = True
    group_size: Optional[int] = None
    block_structure: Any = None
    actorder: Optional[str] = None
    dynamic: Any = False

    def __post_init__(self):
        config_flag(self.symmetric, "symmetric", "compressed-tensors")
        config_int(self.num_bits, "num_bits", "compressed-tensors")
        problems = []
        if self.format != "pack-quantized":
            problems.append(f"format '{self.format}'")
        if self.type != "int" or self.num_bits != 4:
            problems.append(f"{self.type}{self.num_bits} weights")
        group_ok = self.strategy == "group" and isinstance(self.group_size, int) and self.group_size > 0 \
            and self.group_size % GROUP_SIZE == 0
        if not group_ok and self.strategy != "channel":
            problems.append(f"strategy '{self.strategy}' with group_size {self.group_size}")
        if self.actorder not in (None, "weight", "static"):
            problems.append(f"actorder '{self.actorder}' (needs g_idx)")
        if self.dynamic not in (False, None):
            problems.append(f"dynamic weights ({self.dynamic})")
        if problems:
            raise unsupported("compressed-tensors " + ", ".join(problems))

    def get_tensors_attrs(self, shape_n, shape_k, param_dtype, num_experts=None, has_bias=False, stack_size=1):
        attrs = int4_tensor_attrs("weight_packed", shape_n, shape_k, param_dtype, has_bias, self.layout_group_size,
                                  None if self.symmetric else "weight_zero_point")
        attrs["weight_shape"] = {"shape": (2,), "dtype": torch.int64, "extra_attrs": {}}
        return add_expert_dim(attrs, num_experts)

    def to_humming_schema(self, param_dtype=None) -> HummingWeightSchema:
        return HummingWeightSchema(b_dtype=dtypes.uint4, weight_scale_group_size=self.layout_group_size,
                                   has_zero_point=not self.symmetric)

    @property
    def layout_group_size(self) -> int:
        """The scale group along K; 0 for the channel strategy (one scale per row)."""
        return 0 if self.strategy == "channel" else self.group_size

    def infer_shape(self, tensors):
        weight = tensors["weight_packed"]
        return weight.shape[-2], weight.shape[-1] * 8, (weight.shape[0] if weight.dim() == 3 else None), False

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None, device=None):
        check_param_dtype(param_dtype)
        require_tensors(tensors, ("weight_packed", "weight_scale"), "a compressed-tensors")
        weight = tensors["weight_packed"]
        if weight.dtype != torch.int32:
            raise ValueError(f"humming: weight_packed must be int32, got {weight.dtype}")
        scale = tensors["weight_scale"]
        n, k = sum(shape_n_stacks), sum(shape_k_stacks)
        lead = (num_experts,) if num_experts else ()
        groups = k // scale_group(self.layout_group_size, k)
        if tuple(weight.shape) != lead + (n, k // 8) or tuple(scale.shape) != lead + (n, groups):
            raise ValueError(f"humming: compressed-tensors tensors have shapes {tuple(weight.shape)} / "
                             f"{tuple(scale.shape)}, expected {lead + (n, k // 8)} / {lead + (n, groups)}")
        out = {"weight": weight, "weight_scale": scale.to(param_dtype)}
        if not self.symmetric:
            zp = tensors.get("weight_zero_point")
            if zp is None or zp.dtype != torch.int32 or tuple(zp.shape) != lead + (n // 8, groups):
                raise ValueError(f"humming: asymmetric compressed-tensors needs weight_zero_point int32 "
                                 f"{lead + (n // 8, groups)} (packed along N), got "
                                 f"{None if zp is None else (zp.dtype, tuple(zp.shape))}")
            out["zero_point"] = zp
        return self.to_humming_schema(param_dtype), keep_bias(tensors, out)


@dataclasses.dataclass(kw_only=True)
class CompressedTensorsInputSchema(BaseInputSchema):
    """Quantized activations (W4A8, W8A8, ...): chord runs 16-bit (bfloat16 / float16) activations only."""

    quant_method: str = "compressed-tensors"
    format: Optional[str] = None
    type: str = "int"
    num_bits: int = 8
    dynamic: Any = True
    group_size: Optional[int] = None
    symmetric: bool = True
    strategy: Optional[str] = None

    def __post_init__(self):
        raise unsupported(f"quantized activations ({self.type}{self.num_bits}, compressed-tensors input_activations)")

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None,
                        sm_version=None, device=None):
        return HummingInputSchema(), {}
