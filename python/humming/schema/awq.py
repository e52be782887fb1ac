"""AWQ checkpoints (quant_method "awq", AutoAWQ's GEMM layout): qweight int32 [.., K, N/8]
packed along N with the columns of a word in the order 0, 2, 4, 6, 1, 3, 5, 7, qzeros int32
[.., K/g, N/8] in the same order (the zero point as is), scales [.., K/g, N]:
W = (code - zero) * scale. Converted to the humming form: codes repacked along K
([.., N, K/8]), scales N-first, the zero points packed along N ([.., N/8, K/g]). Served: 4
bits, zero_point: true, group size a multiple of 32 or -1 (channel-wise)."""
import dataclasses
from typing import Any, ClassVar, Dict, List, Optional

import torch

from chord_kernels.checkpoint import unpack_awq
from humming import dtypes
from humming.schema.base import (
    BaseWeightSchema,
    add_expert_dim,
    check_param_dtype,
    config_flag,
    k_first_scales_and_zeros,
    int4_bits_and_group_problems,
    keep_bias,
    require_tensors,
    unsupported,
)
from humming.schema.humming import HummingWeightSchema
from humming.utils.weight import pack_int4, pack_zero_point, scale_group


@dataclasses.dataclass(kw_only=True)
class AWQWeightSchema(BaseWeightSchema):
    quant_method: str = "awq"
    bits: Optional[int] = None  # required, as vLLM's AWQ config requires them
    group_size: Optional[int] = None
    zero_point: bool = True
    version: Optional[str] = "gemm"
    modules_to_not_convert: Any = None

    # AutoAWQ's own names, which vLLM's AWQ config reads too.
    KWARGS_ALIAS: ClassVar[Dict[str, List[str]]] = {"bits": ["w_bit"], "group_size": ["q_group_size"]}

    def __post_init__(self):
        problems = int4_bits_and_group_problems(self.bits, self.group_size, "AWQ")
        if not config_flag(self.zero_point, "zero_point", "AWQ"):
            problems.append("zero_point: false")
        if self.version not in (None, "gemm", "GEMM"):
            problems.append(f"version '{self.version}' (the GEMM packing is served)")
        if problems:
            raise unsupported("AWQ " + ", ".join(problems))

    def get_tensors_attrs(self, shape_n, shape_k, param_dtype, num_experts=None, has_bias=False, stack_size=1):
        if has_bias:
            raise unsupported("a bias")
        return add_expert_dim({
            "qweight": {"shape": (shape_k, shape_n // 8), "dtype": torch.int32,
                        "extra_attrs": {"input_dim": 0, "output_dim": 1, "packed_dim": 1, "packed_factor": 8}},
            **k_first_scales_and_zeros(self.group_size, shape_n, shape_k, param_dtype),
        }, num_experts)

    def to_humming_schema(self, param_dtype=None) -> HummingWeightSchema:
        return HummingWeightSchema(b_dtype=dtypes.uint4, weight_scale_group_size=max(self.group_size, 0),
                                   has_zero_point=True)

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None, device=None):
        check_param_dtype(param_dtype)
        require_tensors(tensors, ("qweight", "qzeros", "scales"), "an AWQ")
        qweight, qzeros, scales = tensors["qweight"], tensors["qzeros"], tensors["scales"]
        n, k = sum(shape_n_stacks), sum(shape_k_stacks)
        lead = (num_experts,) if num_experts else ()
        groups = k // scale_group(self.group_size, k)
        for name, t, shape in (("qweight", qweight, (k, n // 8)), ("qzeros", qzeros, (groups, n // 8))):
            if t.dtype != torch.int32 or tuple(t.shape) != lead + shape:
                raise ValueError(f"humming: AWQ {name} must be int32 {lead + shape}, got {t.dtype} {tuple(t.shape)}")
        if tuple(scales.shape) != lead + (groups, n):
            raise ValueError(f"humming: AWQ scales must have shape {lead + (groups, n)}, got {tuple(scales.shape)}")
        codes, zeros = unpack_awq(qweight, qzeros)  # [E, N, K], [E, N, K/g]
        out = {"weight": pack_int4(codes).reshape(lead + (n, k // 8)),
               "weight_scale": scales.transpose(-1, -2).contiguous().to(param_dtype),
               "zero_point": pack_zero_point(zeros).reshape(lead + (n // 8, groups))}
        return self.to_humming_schema(param_dtype), keep_bias(tensors, out)
