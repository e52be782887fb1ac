"""The humming contract's enumerations and LayerConfig, the per-layer record that
prepare_and_transform_humming_tensors returns and every forward call takes."""
import dataclasses
import enum
import json
from typing import Any, Optional, Tuple

import torch


class MmaType(enum.Enum):
    MMA = "mma"
    WGMMA = "wgmma"
    MXMMA = "mxmma"


class WeightScaleType(enum.Enum):
    GROUP = "group"
    BLOCK = "block"
    CHANNEL = "channel"
    TENSOR = "tensor"
    GROUP_TENSOR = "group_tensor"


class WeightScale2Type(enum.Enum):
    NONE = "none"
    CHANNEL = "channel"
    TENSOR = "tensor"


class GemmType(enum.Enum):
    DENSE = "dense"
    INDEXED = "indexed"
    GROUPED_CONTIGUOUS = "grouped_contiguous"
    GROUPED_MASKED = "grouped_masked"


class InputQuantizationMode(enum.Enum):
    """How activations are quantized before the GEMM. chord runs 16-bit activations, so
    every layer it accepts is Disabled; the other members exist so that callers can name
    them (and be refused with a message)."""

    Disabled = "disabled"
    DynamicToken = "dynamic_token"
    DynamicGroup = "dynamic_group"
    StaticTensor = "static_tensor"
    StaticTensorDynamicGroup = "static_tensor_dynamic_group"
    DynamicGroupToken = "dynamic_group_token"

    @property
    def should_quantize(self) -> bool:
        return self is not InputQuantizationMode.Disabled

    @property
    def has_group_scale(self) -> bool:
        return self in (InputQuantizationMode.DynamicGroup, InputQuantizationMode.StaticTensorDynamicGroup,
                        InputQuantizationMode.DynamicGroupToken)

    uses_group_scale = has_group_scale

    @property
    def has_secondary_scale(self) -> bool:
        return self in (InputQuantizationMode.StaticTensorDynamicGroup, InputQuantizationMode.DynamicGroupToken)

    @property
    def has_static_tensor_scale(self) -> bool:
        return self in (InputQuantizationMode.StaticTensor, InputQuantizationMode.StaticTensorDynamicGroup)

    @property
    def has_dynamic_token_scale(self) -> bool:
        return self in (InputQuantizationMode.DynamicToken, InputQuantizationMode.DynamicGroupToken)


@dataclasses.dataclass(kw_only=True)
class LayerConfig:
    """One transformed layer (or MoE sublayer): its types and shapes as the caller sees them,
    and the tag of chord's packed weight that humming_forward checks before it launches.

    shape_n / shape_k are the layer's logical sizes; chord needs no padding, so
    pad_shape_n and pad_shape_k (the padding a caller subtracts) are 0."""

    a_dtype: Any
    b_dtype: Any
    c_dtype: Any
    bs_dtype: Any
    shape_n: int
    shape_k: int
    pad_shape_n: int = 0
    pad_shape_k: int = 0
    num_experts: int = 0
    as_dtype: Any = None
    input_quant_mode: InputQuantizationMode = InputQuantizationMode.Disabled
    input_scale_group_size: int = 0
    weight_scale_group_size: int = 32
    weight_scale_type: WeightScaleType = WeightScaleType.GROUP
    has_zero_point: bool = False
    has_bias: bool = False
    mma_type: MmaType = MmaType.MMA
    device_index: Optional[int] = None
    packed_tag: Tuple[int, ...] = ()

    def __post_init__(self):
        # The tuning rows and chord's tables are looked up by these: an impossible layer is an
        # error here, not rows for a shape that cannot exist.
        for value, name, least in ((self.shape_n, "shape_n", 1), (self.shape_k, "shape_k", 1),
                                   (self.num_experts, "num_experts", 0)):
            if isinstance(value, bool) or not hasattr(value, "__index__") or value < least:
                raise ValueError(f"humming: LayerConfig {name} must be an integer >= {least}, got {value!r}")

    @property
    def experts(self) -> int:
        return self.num_experts or 1

    @property
    def torch_dtype(self) -> torch.dtype:
        from humming import dtypes
        return dtypes.torch_dtype_map[self.c_dtype]

    def check_device(self, device: torch.device) -> None:
        """The tensors of a call must be on the GPU the layer was packed on."""
        device = torch.device(device)
        if device.type != "cuda" or (self.device_index is not None and device.index != self.device_index):
            raise ValueError(f"humming (chord backend): this layer lives on cuda:{self.device_index}, the call's "
                             f"tensors on {device}")

    def to_str(self) -> str:
        return json.dumps({
            "backend": "chord", "a_dtype": str(self.a_dtype), "b_dtype": str(self.b_dtype),
            "c_dtype": str(self.c_dtype), "bs_dtype": str(self.bs_dtype), "shape_n": self.shape_n,
            "shape_k": self.shape_k, "num_experts": self.num_experts,
            "weight_scale_group_size": self.weight_scale_group_size, "has_zero_point": self.has_zero_point,
        }, sort_keys=True)
