"""Schema base classes: a weight (or input) schema says which tensors a checkpoint holds for
one layer and converts them into the humming form (HummingWeightSchema)."""
import dataclasses
import math
from typing import Any, ClassVar, Dict, List, Optional, Tuple

import torch

from humming import dtypes
from humming.utils.weight import GROUP_SIZE, scale_attrs, scale_group, scale_kind


SERVED = ("chord serves INT4 W4A16: bfloat16 or float16 activations (the model dtype) x 4-bit integer weights, "
          "with or without integer zero points, group size a multiple of 32 (32, 64, 128, ...) or channel-wise "
          "(humming uint4 / int4, compressed-tensors pack-quantized int4, GPTQ 4-bit without desc_act, AWQ 4-bit GEMM)")


def unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"humming (chord backend): {what} is unsupported; {SERVED}")


def _config_kwargs(cls, config: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(config, dict):
        raise TypeError(f"humming: a {cls.__name__} config must be a dict, got {type(config).__name__}")
    kwargs = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        if field.name in config:
            kwargs[field.name] = config[field.name]
            continue
        for alias in cls.KWARGS_ALIAS.get(field.name, []):
            if alias in config:
                kwargs[field.name] = config[alias]
                break
    return kwargs


def k_first_scales_and_zeros(group_size: int, shape_n: int, shape_k: int, param_dtype: torch.dtype):
    """The scales [K/G, N] and qzeros int32 [K/G, N/8] (packed along N) that GPTQ and AWQ
    checkpoints both store, with the attributes vLLM's linear parameters and MoE loader need."""
    groups = shape_k // scale_group(group_size, shape_k)
    return {
        "scales": {"shape": (groups, shape_n), "dtype": param_dtype, "extra_attrs": scale_attrs(group_size, 0, 1)},
        "qzeros": {"shape": (groups, shape_n // 8), "dtype": torch.int32,
                   "extra_attrs": {"input_dim": 0, "output_dim": 1, "packed_dim": 1, "packed_factor": 8,
                                   "scale_type": scale_kind(group_size)}},
    }


def add_expert_dim(attrs: Dict[str, Dict[str, Any]], num_experts: Optional[int]) -> Dict[str, Dict[str, Any]]:
    """Prefix every tensor shape with the expert count (dims named in extra_attrs shift by 1)."""
    if not num_experts:
        return attrs
    for attr in attrs.values():
        attr["shape"] = (num_experts,) if attr["shape"] == (1,) else (num_experts,) + tuple(attr["shape"])
        extra = attr.setdefault("extra_attrs", {})
        for key in list(extra):
            if key.endswith("_dim"):
                extra[key] = extra[key] + 1
    return attrs


@dataclasses.dataclass(kw_only=True)
class BaseWeightSchema:
    quant_method: str = ""

    KWARGS_ALIAS: ClassVar[Dict[str, List[str]]] = {}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "BaseWeightSchema":
        from humming.schema import WEIGHT_SCHEMA_MAP

        if cls is BaseWeightSchema:
            method = config.get("quant_method")
            if method not in WEIGHT_SCHEMA_MAP:
                raise unsupported(f"weight quant_method '{method}'")
            return WEIGHT_SCHEMA_MAP[method].from_config(config)
        return cls(**_config_kwargs(cls, config))

    def get_tensors_attrs(self, shape_n: int, shape_k: int, param_dtype: torch.dtype,
                          num_experts: Optional[int] = None, has_bias: bool = False,
                          stack_size: int = 1) -> Dict[str, Dict[str, Any]]:
        raise NotImplementedError

    def to_humming_schema(self, param_dtype: Optional[torch.dtype] = None) -> "BaseWeightSchema":
        """The humming form this checkpoint converts into (its convert_humming's schema)."""
        raise NotImplementedError

    def get_padded_tensors_attrs(self, shape_n: int, shape_k: int, param_dtype: torch.dtype,
                                 num_experts: Optional[int] = None, has_bias: bool = False,
                                 pad_n_to_multiple: int = 1, pad_k_to_multiple: int = 1,
                                 stack_size: int = 1) -> Dict[str, Dict[str, Any]]:
        for value, name in ((pad_n_to_multiple, "pad_n_to_multiple"), (pad_k_to_multiple, "pad_k_to_multiple")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"humming: {name} must be a positive integer, got {value!r}")
        padded_n = math.ceil(shape_n / pad_n_to_multiple) * pad_n_to_multiple
        padded_k = math.ceil(shape_k / pad_k_to_multiple) * pad_k_to_multiple
        attrs = self.get_tensors_attrs(shape_n, shape_k, param_dtype, num_experts, has_bias, stack_size)
        if (padded_n, padded_k) == (shape_n, shape_k):
            return attrs
        padded = self.get_tensors_attrs(padded_n, padded_k, param_dtype, num_experts, has_bias, stack_size)
        for key, attr in padded.items():
            pad = tuple(b - a for a, b in zip(attrs[key]["shape"], attr["shape"]))
            attr.setdefault("extra_attrs", {})["pad_shape"] = pad
        return padded

    def process_loaded_weight(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        return tensor

    def infer_shape(self, tensors: Dict[str, torch.Tensor]) -> Tuple[int, int, Optional[int], bool]:
        raise NotImplementedError

    def validate_tensors(self, tensors: Dict[str, torch.Tensor], shape_n: int, shape_k: int,
                         param_dtype: torch.dtype, num_experts: Optional[int] = None, has_bias: bool = False):
        attrs = self.get_tensors_attrs(shape_n, shape_k, param_dtype, num_experts, has_bias)
        for key, attr in attrs.items():
            if key not in tensors:
                raise ValueError(f"humming: tensor '{key}' is required by {self.quant_method}")
            t = tensors[key]
            if t.dtype != attr["dtype"]:
                raise ValueError(f"humming: '{key}' must be {attr['dtype']}, got {t.dtype}")
            if tuple(t.shape) != tuple(attr["shape"]):
                raise ValueError(f"humming: '{key}' must have shape {tuple(attr['shape'])}, got {tuple(t.shape)}")

    def convert_humming(self, tensors: Dict[str, torch.Tensor], shape_n_stacks: List[int],
                        shape_k_stacks: List[int], param_dtype: torch.dtype, num_experts: Optional[int] = None,
                        device=None):
        raise NotImplementedError


@dataclasses.dataclass(kw_only=True)
class BaseInputSchema:
    quant_method: str = ""

    KWARGS_ALIAS: ClassVar[Dict[str, List[str]]] = {}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "BaseInputSchema":
        from humming.schema import INPUT_SCHEMA_MAP

        if cls is BaseInputSchema:
            method = config.get("quant_method")
            if method not in INPUT_SCHEMA_MAP:
                raise unsupported(f"input quant_method '{method}'")
            return INPUT_SCHEMA_MAP[method].from_config(config)
        return cls(**_config_kwargs(cls, config))

    def get_activation_bits(self) -> int:
        return 16

    def to_humming_schema(self, param_dtype: Optional[torch.dtype] = None) -> "BaseInputSchema":
        """The humming form of these inputs (HummingInputSchema overrides it; the others refuse
        to be built)."""
        raise NotImplementedError

    def get_tensors_attrs(self, shape_k: int, param_dtype: torch.dtype, num_experts: Optional[int] = None,
                          stack_size: int = 1) -> Dict[str, Dict[str, Any]]:
        return {}

    def convert_humming(self, tensors: Dict[str, torch.Tensor], shape_n_stacks: List[int],
                        shape_k_stacks: List[int], param_dtype: torch.dtype, num_experts: Optional[int] = None,
                        sm_version=None, device=None):
        raise NotImplementedError


def config_int(value: Any, key: str, method: str) -> int:
    """A config's integer field as JSON holds it: an int, never a string, float or bool (a
    config that spells one differently is malformed, and guessing could pick another layout)."""
    if value is None:
        raise ValueError(f"humming: the {method} config lacks '{key}'")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"humming: {method} '{key}' must be an integer, got {value!r}")
    return value


def config_flag(value: Any, key: str, method: str) -> bool:
    """A config's true / false field: a bool only. The string "false" is truthy, so reading
    one by truth value would, for `sym`, drop the zero points and dequantize wrongly."""
    if not isinstance(value, bool):
        raise ValueError(f"humming: {method} '{key}' must be true or false, got {value!r}")
    return value


def int4_bits_and_group_problems(bits: int, group_size: int, method: str = "GPTQ / AWQ") -> List[str]:
    """What a GPTQ / AWQ config's bits and group_size ask for that chord cannot serve: 4 bits,
    a group a multiple of 32, or -1 (one group per row). A missing or malformed value is a
    ValueError naming the key."""
    config_int(bits, "bits", method)
    config_int(group_size, "group_size", method)
    problems = []
    if bits != 4:
        problems.append(f"{bits}-bit weights")
    if group_size != -1 and (group_size <= 0 or group_size % GROUP_SIZE):
        problems.append(f"group_size {group_size}")
    return problems


# The model dtypes chord serves: the dtype of the activations, the outputs and the stored scales.
MODEL_DTYPES = (torch.bfloat16, torch.float16)


def keep_bias(tensors: Dict[str, Any], out: Dict[str, Any]) -> Dict[str, Any]:
    """A checkpoint's bias goes on to the transform, which refuses it (chord's GEMMs add none):
    a conversion that dropped it would run the layer without it, silently (vLLM's GPTQ MoE
    layers keep expert biases a checkpoint stores even where the model declares none). An
    all-zero bias adds nothing and is left out."""
    bias = tensors.get("bias")
    if bias is not None and bool(torch.as_tensor(bias).ne(0).any()):
        out["bias"] = bias
    return out


def require_tensors(tensors: Dict[str, Any], names: Tuple[str, ...], layer: str) -> None:
    """The checkpoint tensors a conversion reads, each present, or a ValueError naming the
    missing ones. Given only the names chord's transform writes ('weight', 'weight_scale'),
    the caller is converting a layer that was already transformed: vLLM 0.34's direct weight
    reload (VLLM_RELOAD_MODE=direct) does that, listing its parameters under the kernel's
    names, and the checkpoint's scales are no longer among them."""
    missing = [name for name in names if name not in tensors]
    if not missing:
        return
    message = f"humming: {layer} layer needs {', '.join(names)}; missing {', '.join(missing)}, got {sorted(tensors)}"
    if "weight" in tensors and set(tensors) <= {"weight", "weight_scale", "zero_point"}:
        message += (". These are a transformed layer's tensors, not the checkpoint's: vLLM's direct weight "
                    "reload (VLLM_RELOAD_MODE=direct) converts the layer again from them, which cannot work; "
                    "reload with VLLM_RELOAD_MODE=layerwise (vLLM's default)")
    raise ValueError(message)


def check_param_dtype(param_dtype: torch.dtype) -> torch.dtype:
    """The model dtype, if chord serves it: bfloat16 or float16 (activations, outputs and the
    packed scales all take it)."""
    if param_dtype not in MODEL_DTYPES:
        raise unsupported(f"model dtype {param_dtype} (run the model in bfloat16 or float16)")
    return param_dtype


def check_scale_dtype(bs_dtype, param_dtype: torch.dtype):
    """A schema's declared scale type (None: the model dtype) against the model dtype: chord
    stores the scales in the activations' dtype, so a declared one must be that dtype."""
    if bs_dtype is not None and bs_dtype != dtypes.DataType.from_torch_dtype(param_dtype):
        raise unsupported(f"weight scale type {bs_dtype} with model dtype {param_dtype} (chord stores the "
                          f"scales in the model dtype)")


def as_dtype(value) -> Optional[dtypes.DataType]:
    if value is None or isinstance(value, dtypes.DataType):
        return value
    return dtypes.DataType.from_str(value)
