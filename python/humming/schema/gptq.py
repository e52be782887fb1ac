"""GPTQ checkpoints (quant_method "gptq"): qweight int32 [.., K/8, N] (8 codes per word
along K, least significant first), scales [.., K/g, N], qzeros int32 [.., K/g, N/8] (packed
along N), g_idx. A symmetric GPTQ weight stores code = q + 8 (uint4b8), so W = (code - 8) *
scale: chord's form once transposed to N-first. sym: false stores a zero point per (group,
column): W = (code - zero) * scale, qzeros holding zero - 1 (format "gptq", v1: AutoGPTQ,
GPTQModel's default on disk) or the zero (format "gptq_v2"). Served: 4 bits, symmetric or
not, group size a multiple of 32 or -1 (channel-wise), no desc_act."""
import dataclasses
from typing import Any, Optional

import torch

from humming import dtypes
from humming.schema.base import (BaseWeightSchema, add_expert_dim, check_param_dtype, config_flag,
                                  int4_bits_and_group_problems, k_first_scales_and_zeros, keep_bias,
                                  require_tensors, unsupported)
from humming.schema.humming import HummingWeightSchema
from humming.utils.weight import pack_zero_point, scale_group
from chord_kernels.checkpoint import unpack_gptq_zeros


@dataclasses.dataclass(kw_only=True)
class GPTQWeightSchema(BaseWeightSchema):
    quant_method: str = "gptq"
    bits: Optional[int] = None  # required, as vLLM's GPTQ config requires them
    group_size: Optional[int] = None
    desc_act: bool = False
    sym: bool = True
    checkpoint_format: Optional[str] = None
    format: Optional[str] = None  # GPTQModel's current name of checkpoint_format
    lm_head: Any = False
    dynamic: Any = None

    def __post_init__(self):
        problems = int4_bits_and_group_problems(self.bits, self.group_size, "GPTQ")
        config_flag(self.sym, "sym", "GPTQ")
        if config_flag(self.desc_act, "desc_act", "GPTQ"):
            problems.append("desc_act (act-order, g_idx)")
        for key in ("checkpoint_format", "format"):
            if getattr(self, key) not in (None, "gptq", "gptq_v2"):
                problems.append(f"{key} '{getattr(self, key)}'")
        if problems:
            raise unsupported("GPTQ " + ", ".join(problems))

    @property
    def zeros_format(self) -> str:
        """How qzeros store the zero point: "v2" (as is) for format gptq_v2, else "v1" (zero - 1)."""
        return "v2" if "gptq_v2" in (self.format, self.checkpoint_format) else "v1"

    def get_tensors_attrs(self, shape_n, shape_k, param_dtype, num_experts=None, has_bias=False, stack_size=1):
        """The checkpoint's tensors as vLLM registers them (`--quantization humming` and the MoE
        method): qweight packed along K, qzeros along N, and g_idx, which a GPTQ checkpoint
        stores whatever sym and desc_act say (the conversion reads qzeros only when sym is
        false, and desc_act is refused). Registered so that the checkpoint's names have a
        parameter to load into; vLLM's MoE loader leaves g_idx unloaded, which nothing reads."""
        if has_bias:
            raise unsupported("a bias")
        return add_expert_dim({
            "qweight": {"shape": (shape_k // 8, shape_n), "dtype": torch.int32,
                        "extra_attrs": {"input_dim": 0, "output_dim": 1, "packed_dim": 0, "packed_factor": 8}},
            **k_first_scales_and_zeros(self.group_size, shape_n, shape_k, param_dtype),
            "g_idx": {"shape": (shape_k,), "dtype": torch.int32, "extra_attrs": {"input_dim": 0}},
        }, num_experts)

    def to_humming_schema(self, param_dtype=None) -> HummingWeightSchema:
        return HummingWeightSchema(b_dtype=dtypes.uint4, weight_scale_group_size=max(self.group_size, 0),
                                   has_zero_point=not self.sym)

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None, device=None):
        check_param_dtype(param_dtype)
        require_tensors(tensors, ("qweight", "scales"), "a GPTQ")
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
        if not self.sym:
            qzeros = tensors.get("qzeros")
            if qzeros is None or qzeros.dtype != torch.int32 or tuple(qzeros.shape) != lead + (groups, n // 8):
                raise ValueError(f"humming: asymmetric GPTQ needs qzeros int32 {lead + (groups, n // 8)}, got "
                                 f"{None if qzeros is None else (qzeros.dtype, tuple(qzeros.shape))}")
            zeros = unpack_gptq_zeros(qzeros if qzeros.dim() == 3 else qzeros.unsqueeze(0), self.zeros_format)
            out["zero_point"] = pack_zero_point(zeros).reshape(lead + (n // 8, groups))
        return self.to_humming_schema(param_dtype), keep_bias(tensors, out)
