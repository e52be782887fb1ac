"""The humming form of a layer's tensors (what transform_humming_layer consumes)."""
import dataclasses
from typing import Any, ClassVar, Dict, List, Optional

import torch

from humming import dtypes
from humming.config import InputQuantizationMode, WeightScale2Type, WeightScaleType
from humming.schema.base import (
    MODEL_DTYPES,
    BaseInputSchema,
    BaseWeightSchema,
    add_expert_dim,
    as_dtype,
    check_param_dtype,
    check_scale_dtype,
    config_flag,
    unsupported,
)
from humming.utils.weight import (GROUP_SIZE, dequantize_weight, pack_zero_point, quantize_weight, scale_attrs,
                                  scale_group, scale_kind)


def int4_tensor_attrs(weight_name, shape_n, shape_k, param_dtype, has_bias, group_size, zero_point_name=None):
    """Checkpoint tensors of one INT4 layer: int32 words of 8 codes along K and a scale per
    group of K elements (group size 0 or -1: one per row), and with zero_point_name the zero
    points, int32 [N/8, K/group] packed along N. The humming and compressed-tensors forms
    differ only in the tensors' names."""
    if has_bias:
        raise unsupported("a bias")
    group = scale_group(group_size, shape_k)
    kind = scale_kind(group_size)  # vLLM's MoE loader needs it on the scales and the zero points
    attrs = {} if zero_point_name is None else {
        zero_point_name: {
            "shape": (shape_n // 8, shape_k // group),
            "dtype": torch.int32,
            "extra_attrs": {"input_dim": 1, "output_dim": 0, "packed_dim": 0, "packed_factor": 8, "scale_type": kind},
        },
    }
    return attrs | {
        weight_name: {
            "shape": (shape_n, shape_k // 8),
            "dtype": torch.int32,
            "extra_attrs": {"input_dim": 1, "output_dim": 0, "packed_dim": 1, "packed_factor": 8},
        },
        "weight_scale": {
            "shape": (shape_n, shape_k // group),
            "dtype": param_dtype,
            "extra_attrs": scale_attrs(group_size, 1, 0),
        },
    }

@dataclasses.dataclass(kw_only=True)
class HummingWeightSchema(BaseWeightSchema):
    """weight int32 [N, K/8] (uint4 codes, 8 per word) + weight_scale [N, K/group]
    (group a multiple of 32, or channel-wise: [N, 1]); with has_zero_point, zero_point int32
    [N/8, K/group] (integer zero points 0..15 packed along N: W = (code - zero) * scale)."""

    quant_method: str = "humming"
    b_dtype: Any = None
    bs_dtype: Any = None
    weight_scale_group_size: int = 0
    weight_scale_group_size_n: int = 0
    weight_scale_type: Any = None
    weight_scale_2_type: Any = None
    has_zero_point: bool = False
    is_fp_zero_point: bool = False
    hadamard_block_size: int = 0

    KWARGS_ALIAS: ClassVar[Dict[str, List[str]]] = {
        "b_dtype": ["weight_dtype", "dtype"],
        "weight_scale_group_size": ["group_size"],
        "weight_scale_group_size_n": ["group_size_n"],
        "weight_scale_type": ["scale_type"],
        "weight_scale_2_type": ["scale_2_type"],
        "bs_dtype": ["weight_scale_dtype", "scale_dtype"],
    }

    def __post_init__(self):
        if self.quant_method != "humming":
            raise ValueError(f"HummingWeightSchema: quant_method must be 'humming', got '{self.quant_method}'")
        if self.b_dtype is None:
            raise ValueError("HummingWeightSchema: b_dtype is required")
        config_flag(self.has_zero_point, "has_zero_point", "humming")
        config_flag(self.is_fp_zero_point, "is_fp_zero_point", "humming")
        self.b_dtype = as_dtype(self.b_dtype)
        # A signed 4-bit weight is stored with the +8 offset: the same codes as uint4.
        if self.b_dtype == dtypes.int4:
            self.b_dtype = dtypes.uint4
        self.bs_dtype = as_dtype(self.bs_dtype)
        if isinstance(self.weight_scale_type, str):
            self.weight_scale_type = WeightScaleType(self.weight_scale_type)
        if self.weight_scale_type is None:
            if self.weight_scale_group_size_n > 1:
                self.weight_scale_type = WeightScaleType.BLOCK
            elif self.weight_scale_group_size == 0:
                self.weight_scale_type = WeightScaleType.CHANNEL
            else:
                self.weight_scale_type = WeightScaleType.GROUP
        if isinstance(self.weight_scale_2_type, str):
            self.weight_scale_2_type = WeightScale2Type(self.weight_scale_2_type)
        if self.weight_scale_2_type is None:
            self.weight_scale_2_type = WeightScale2Type.NONE
        self.check_supported()

    def check_supported(self):
        if self.b_dtype != dtypes.uint4:
            raise unsupported(f"weight type {self.b_dtype}")
        group_ok = (self.weight_scale_type == WeightScaleType.GROUP and self.weight_scale_group_size > 0
                    and self.weight_scale_group_size % GROUP_SIZE == 0)
        if not group_ok and self.weight_scale_type != WeightScaleType.CHANNEL:
            raise unsupported(f"weight scales '{self.weight_scale_type.value}' with group size "
                              f"{self.weight_scale_group_size}")
        if self.weight_scale_group_size_n not in (0, 1):
            raise unsupported(f"block scales (group_size_n = {self.weight_scale_group_size_n})")
        if self.weight_scale_2_type != WeightScale2Type.NONE:
            raise unsupported(f"a second weight scale ('{self.weight_scale_2_type.value}')")
        if self.is_fp_zero_point:
            raise unsupported("a floating-point weight zero point")
        if self.bs_dtype not in (None, dtypes.bfloat16, dtypes.float16):
            raise unsupported(f"weight scale type {self.bs_dtype}")
        if self.hadamard_block_size not in (0, 1):
            raise unsupported(f"Hadamard-rotated weights (block {self.hadamard_block_size})")

    def get_tensors_attrs(self, shape_n, shape_k, param_dtype, num_experts=None, has_bias=False, stack_size=1):
        return add_expert_dim(int4_tensor_attrs("weight", shape_n, shape_k, param_dtype, has_bias, self.group_size,
                                                "zero_point" if self.has_zero_point else None), num_experts)

    @property
    def group_size(self) -> int:
        """The scale group along K; 0 for one scale per row."""
        return 0 if self.weight_scale_type == WeightScaleType.CHANNEL else self.weight_scale_group_size

    def to_humming_schema(self, param_dtype=None) -> "HummingWeightSchema":
        return self

    def infer_shape(self, tensors):
        weight = tensors["weight"]
        return weight.shape[-2], weight.shape[-1] * 8, (weight.shape[0] if weight.dim() == 3 else None), False

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None, device=None):
        check_param_dtype(param_dtype)
        check_scale_dtype(self.bs_dtype, param_dtype)
        out = dict(tensors)
        out["weight_scale"] = tensors["weight_scale"].to(param_dtype)
        return dataclasses.replace(self), out

    def dequant_tensors(self, tensors: Dict[str, torch.Tensor]) -> torch.Tensor:
        return dequantize_weight(tensors["weight"], tensors["weight_scale"], tensors.get("zero_point"), packed=True)

    def quant_tensor(self, tensor: torch.Tensor, target=None, param_dtype=None) -> Dict[str, torch.Tensor]:
        """Quantizes a float weight into this schema's tensors. Called as (tensor, param_dtype)
        or, as vLLM's loaders do, (tensor, target_schema, param_dtype)."""
        if isinstance(target, torch.dtype):
            target, param_dtype = None, target
        schema = target or self
        if not isinstance(schema, HummingWeightSchema):
            raise unsupported(f"quantizing into {type(schema).__name__}")
        param_dtype = check_param_dtype(param_dtype or torch.bfloat16)
        check_scale_dtype(schema.bs_dtype, param_dtype)
        # The scales are computed in the model dtype, the one chord stores them in.
        # schema.group_size: 0 for channel scales, whatever weight_scale_group_size says.
        weight, scale, _, _ = quantize_weight(tensor, schema.b_dtype, dtypes.DataType.from_torch_dtype(param_dtype),
                                              schema.group_size, pack=True)
        out = {"weight": weight, "weight_scale": scale}
        if schema.has_zero_point:  # symmetric codes in a zero-point schema: every zero point is 8
            out["zero_point"] = pack_zero_point(torch.full(scale.shape, 8, dtype=torch.int32, device=scale.device))
        return out

    def requant_tensors(self, tensors, target_weight_schema: "HummingWeightSchema", param_dtype):
        if not isinstance(target_weight_schema, HummingWeightSchema):
            raise unsupported(f"requantizing into {type(target_weight_schema).__name__}")
        return target_weight_schema.quant_tensor(self.dequant_tensors(tensors), param_dtype)


@dataclasses.dataclass(kw_only=True)
class HummingInputSchema(BaseInputSchema):
    """Activations: 16-bit only, bfloat16 or float16 (a_dtype None means the model dtype; a
    given one must be the model dtype); any input quantization is refused when the schema is
    built."""

    quant_method: str = "humming"
    a_dtype: Any = None
    input_scale_group_size: int = 0
    input_scale_dtype: Any = None
    input_quant_mode: Any = None

    KWARGS_ALIAS: ClassVar[Dict[str, List[str]]] = {
        "a_dtype": ["input_dtype", "dtype"],
        "input_scale_group_size": ["group_size"],
        "input_scale_dtype": ["scale_dtype"],
        "input_quant_mode": ["quant_mode"],
    }

    def __post_init__(self):
        self.a_dtype = as_dtype(self.a_dtype)
        self.input_scale_dtype = as_dtype(self.input_scale_dtype)
        if isinstance(self.input_quant_mode, str):
            self.input_quant_mode = InputQuantizationMode(self.input_quant_mode)
        if self.input_quant_mode is None:
            self.input_quant_mode = InputQuantizationMode.Disabled
        if self.a_dtype is not None and self.a_dtype.num_bits != 16:
            raise unsupported(f"activation type {self.a_dtype} (input quantization)")
        if self.a_dtype is not None and self.a_dtype not in (dtypes.bfloat16, dtypes.float16):
            raise unsupported(f"activation type {self.a_dtype}")
        if self.input_quant_mode.should_quantize:
            raise unsupported(f"input quantization mode '{self.input_quant_mode.value}'")
        if self.input_scale_group_size or self.input_scale_dtype is not None:
            raise unsupported("input scales")

    @property
    def static_tensor_scale_name(self) -> Optional[str]:
        return None

    def get_activation_bits(self) -> int:
        return 16

    def to_humming_schema(self, param_dtype=None) -> "HummingInputSchema":
        return self

    def is_compatible_with(self, weight_schema, param_dtype=None) -> bool:
        """vLLM's check_and_fallback_input_schema asks this of the schema it would use: the
        activations (and a weight schema's declared scale type) must be the model dtype,
        bfloat16 or float16."""
        if not isinstance(weight_schema, HummingWeightSchema):
            return False
        if param_dtype is None:
            return True
        if param_dtype not in MODEL_DTYPES:
            return False
        model = dtypes.DataType.from_torch_dtype(param_dtype)
        return self.a_dtype in (None, model) and weight_schema.bs_dtype in (None, model)

    def convert_humming(self, tensors, shape_n_stacks, shape_k_stacks, param_dtype, num_experts=None,
                        sm_version=None, device=None):
        return self, {}
