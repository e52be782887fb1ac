"""GPTQ checkpoints (quant_method "gptq"): qweight int32 [.., K/8, N] (8 codes per word
along K, least significant first), scales [.., K/g, N], qzeros, g_idx. A symmetric GPTQ
weight stores code = q + 8 (uint4b8), so W = (code - 8) * scale: chord's form once
transposed to N-first. Served: 4 bits, symmetric, group size a multiple of 32 or -1
(channel-wise), no desc_act."""
import dataclasses
from typing import Any, Optional

import torch

from humming import dtypes
from humming.schema.base import BaseWeightSchema, check_param_dtype, unsupported
from humming.schema.humming import HummingWeightSchema
from humming.utils.weight import GROUP_SIZE, scale_group


@dataclasses.dataclass(kw_only=True)
class GPTQWeightSchema(BaseWeightSchema):
    quant_method: str = "gptq"
    bits: int = 4
    group_size: int = 128
    desc_act: bool = False
    sym: bool = True
    checkpoint_format: Optional[str] = None
    lm_head: Any = False
    dynamic: Any = None

    def __post_init__(self):
        problems = []
        if self.bits != 4:
            problems.append(f"{self.bits}-bit weights")
        if self.group_size != -1 and (self.group_size <= 0 or self.group_size % GROUP_SIZE):
            problems.append(f"group_size {self.group_size}")
        if not self.sym:
            problems.append("asymmetric weights (sym: false, zero points)")
        if self.desc_act:
            problems.append("desc_act (act-order, g_idx)")
        if self.checkpoint_format not in (None, "gptq"):
            problems.append(f"checkpoint_format '{self.checkpoint_format}'")
        if problems:
            raise unsupported("GPTQ " + ", ".join(problems))

    def to_humming_schema(self, param_dtype=None) -> HummingWeightSchema:
        return HummingWeightSchema(b_dtype=dtypes.uint4, weight_scale_group_size=max(self.group_size, 0))

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None, device=None):
        check_param_dtype(param_dtype)
        for name in ("qweight", "scales"):
            if name not in tensors:
                raise ValueError(f"humming: a GPTQ layer needs qweight and scales, got {sorted(tensors)}")
        qweight, scales = tensors["qweight"], tensors["scales"]
        n, k = sum(shape_n_stacks), sum(shape_k_stacks)
        lead = (num_experts,) if num_experts else ()
        if qweight.dtype != torch.int32 or tuple(qweight.shape) != lead + (k // 8, n):
            raise ValueError(f"humming: GPTQ qweight must be int32 {lead + (k // 8, n)}, got {qweight.dtype} "
                             f"{tuple(qweight.shape)}")
        groups = k // scale_group(self.group_size, k)
        if tuple(scales.shape) != lead + (groups, n):
            raise ValueError(f"humming: GPTQ scales must have shape {lead + (groups, n)}, got "
                             f"{tuple(scales.shape)}")
        out = {"weight": qweight.transpose(-1, -2).contiguous(),
               "weight_scale": scales.transpose(-1, -2).contiguous().to(param_dtype)}
        return self.to_humming_schema(param_dtype), out
