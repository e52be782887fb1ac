"""HummingLayerMeta and HummingMethod: the calls vLLM's Humming backend makes per layer
(prepare_layer_meta -> transform_humming_layer at load; get_default_tuning_configs once;
may_quant_input + forward_layer per forward), served by chord's W4A16 operators.

A layer's sublayer (e.g. "w13", "w2" of a fused MoE) keeps its tensors as
<sublayer>_weight / <sublayer>_weight_scale parameters. After transform_humming_layer
they hold chord's packed layout (uint8, first dimension = experts) and the packed weight
tag lives in the sublayer's HummingLayerMeta.
"""
import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple

import torch

import chord_kernels
from humming import dtypes
from humming.config import GemmType, MmaType, WeightScaleType
from humming.schema import HummingInputSchema, HummingWeightSchema
from humming.schema.base import check_param_dtype, unsupported
from humming.utils.weight import GROUP_SIZE


def get_default_f16_torch_dtype() -> torch.dtype:
    return torch.bfloat16


@dataclasses.dataclass(kw_only=True)
class HummingLayerMeta:
    a_dtype: Any
    b_dtype: Any
    c_dtype: Any
    bs_dtype: Any
    shape_n: int
    shape_k: int
    pad_shape_n: int = 0
    pad_shape_k: int = 0
    num_experts: Optional[int] = None
    has_bias: bool = False
    input_scale_group_size: int = 0
    weight_scale_group_size: int = GROUP_SIZE
    weight_scale_group_size_n: int = 0
    weight_scale_type: Any = WeightScaleType.GROUP
    has_zero_point: bool = False
    is_fp_zero_point: bool = False
    mma_type: Any = MmaType.MMA
    sublayer_name: str = ""
    # Set by transform_humming_layer: (magic, format, layout_version, group_size, E, N, K).
    packed_tag: Optional[Tuple[int, ...]] = None

    @property
    def name_prefix(self) -> str:
        return self.sublayer_name + "_" if self.sublayer_name else ""

    @property
    def weight_name(self) -> str:
        return self.name_prefix + "weight"

    @property
    def weight_scale_name(self) -> str:
        return self.name_prefix + "weight_scale"

    @property
    def zero_point_name(self) -> str:
        return self.name_prefix + "zero_point"

    @property
    def global_scale_name(self) -> str:
        return self.name_prefix + "global_scale"

    @property
    def bias_name(self) -> str:
        return self.name_prefix + "bias"

    @property
    def param_dtype(self) -> torch.dtype:
        return dtypes.torch_dtype_map[self.c_dtype]

    @property
    def experts(self) -> int:
        return self.num_experts or 1

    def to_str(self) -> str:
        return json.dumps({
            "backend": "chord", "a_dtype": str(self.a_dtype), "b_dtype": str(self.b_dtype),
            "c_dtype": str(self.c_dtype), "shape_n": self.shape_n, "shape_k": self.shape_k,
            "num_experts": self.num_experts, "group_size": self.weight_scale_group_size,
            "sublayer_name": self.sublayer_name,
        }, sort_keys=True)


def _parse_json(value, cache: Dict[str, Any]):
    if value is None or isinstance(value, (dict, list)):
        return value
    parsed = cache.get(value)
    if parsed is None:
        parsed = json.loads(value)
        cache[value] = parsed
    return parsed


_compute_cache: Dict[str, Any] = {}
_tuning_cache: Dict[str, Any] = {}


def _gemm_type(value) -> GemmType:
    if isinstance(value, GemmType):
        return value
    try:
        return GemmType(str(getattr(value, "value", value)).lower())
    except ValueError:
        raise ValueError(f"humming: unknown gemm_type '{value}'; known: {[g.value for g in GemmType]}") from None


def _tuning_rows(num_experts: int) -> List[list]:
    """(min_m, max_m, config) rows over valid_shape_m (routed rows on this rank): the block
    is chord_kernels.block_size_for_rows of the mean rows per expert."""
    rows, lower = [], 0
    for block in (16, 32):
        # largest m whose 1.5 x mean rows per expert still fits the block
        upper = int(block * num_experts / 1.5)
        if upper > lower:
            rows.append([lower, upper, {"block_shape": [block, 0, 0], "backend": "chord"}])
            lower = upper
    rows.append([lower, 1 << 62, {"block_shape": [64, 0, 0], "backend": "chord"}])
    return rows


def _arch_of(layer: torch.nn.Module, meta: "HummingLayerMeta") -> Optional[str]:
    """chord's arch name (its tuning tables are per arch) of the layer's GPU: the weight's
    device, else the current one; None without a GPU (the library then reads sm_90a's)."""
    weight = getattr(layer, meta.weight_name, None)
    if isinstance(weight, torch.Tensor) and weight.is_cuda:
        device = weight.device
    elif torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        return None
    major, minor = torch.cuda.get_device_capability(device)
    family = (major, minor) == (9, 0) or major in (10, 12)  # arch-specific ("a") targets
    return f"sm_{major}{minor}{'a' if family else ''}"


def _library_rows(arch: Optional[str], num_experts: int, n: int, k: int) -> Optional[List[list]]:
    """The library's tuning table for the shape (chord_w4a16_tuning_json) as rows over
    valid_shape_m, or None when no table holds it. Exported with top_k = 1 so that its M is
    routed rows (valid_shape_m) and a row's range is the table's rows per expert times E.
    The table's inclusive [min, max] ranges become (lower, upper] ones: lower = min - 1."""
    try:
        text = chord_kernels._ops._C.tuning_json(arch, num_experts, n, k, 1)
    except ValueError:  # an arch the library does not know: keep the rule
        return None
    if text is None:
        return None
    rows = []
    for first, last, config in json.loads(text):
        block = int(config["block_size_m"])
        # block_shape[0] is the routing block; the table's tiles ride along for inspection.
        entry = {"block_shape": [block, 0, 0], "backend": "chord", "source": "tuning_table"}
        entry.update({key: config[key] for key in ("engine", "block_m", "block_n", "block_k", "stages") if key in config})
        rows.append([max(int(first) - 1, 0), int(last), entry])
    return rows or None


def _block_for(rows, valid_shape_m: int) -> int:
    for lower, upper, config in rows:
        if lower < valid_shape_m <= upper:
            return int(config["block_shape"][0])
    if valid_shape_m <= 0 and rows:
        return int(rows[0][2]["block_shape"][0])
    raise ValueError(f"humming: no tuning row covers valid_shape_m = {valid_shape_m}")


class HummingLayerMethod:
    @classmethod
    def prepare_layer_meta(cls, layer: torch.nn.Module, shape_n: int, shape_k: int,
                           weight_schema: HummingWeightSchema, input_schema: Optional[HummingInputSchema] = None,
                           num_experts: Optional[int] = None, pad_n_to_multiple: int = 1,
                           pad_k_to_multiple: int = 1, has_bias: bool = False,
                           torch_dtype: Optional[torch.dtype] = None, sublayer_name: str = "") -> HummingLayerMeta:
        """Records the sublayer's shapes and types. Padding requests are met without padding:
        chord's packed layout needs only N % 16 == 0 and K % 64 == 0, checked here."""
        del pad_n_to_multiple, pad_k_to_multiple
        torch_dtype = torch_dtype or get_default_f16_torch_dtype()
        check_param_dtype(torch_dtype)
        if not isinstance(weight_schema, HummingWeightSchema):
            raise TypeError(f"humming: prepare_layer_meta needs a HummingWeightSchema (convert_humming first), got "
                            f"{type(weight_schema).__name__}")
        weight_schema.check_supported()
        input_schema = input_schema or HummingInputSchema()
        if not isinstance(input_schema, HummingInputSchema):
            raise TypeError(f"humming: input schema must be a HummingInputSchema, got {type(input_schema).__name__}")
        if has_bias:
            raise unsupported("a bias")
        if shape_n % 16 or shape_k % 64:
            raise unsupported(f"shape N={shape_n} K={shape_k} (chord needs N % 16 == 0 and K % 64 == 0)")
        f16 = dtypes.DataType.from_torch_dtype(torch_dtype)
        meta = HummingLayerMeta(
            a_dtype=input_schema.a_dtype or f16, b_dtype=weight_schema.b_dtype,
            c_dtype=f16, bs_dtype=weight_schema.bs_dtype or f16, shape_n=shape_n, shape_k=shape_k,
            num_experts=num_experts or 0, has_bias=False,
            weight_scale_group_size=weight_schema.weight_scale_group_size,
            weight_scale_type=weight_schema.weight_scale_type, sublayer_name=sublayer_name)
        if not hasattr(layer, "humming_metas"):
            layer.humming_metas = {}
        layer.humming_metas[sublayer_name] = meta
        return meta

    @classmethod
    def transform_humming_layer(cls, layer: torch.nn.Module, sublayer_name: str = "",
                                already_padded: bool = False) -> None:
        """Packs <prefix>weight int32 [E, N, K/8] + <prefix>weight_scale [E, N, K/32] into
        chord's layout on the GPU and replaces both parameters with the packed buffers."""
        del already_padded
        meta: HummingLayerMeta = layer.humming_metas[sublayer_name]
        if meta.packed_tag is not None:
            raise RuntimeError(f"humming: sublayer '{sublayer_name}' is already transformed")
        weight = getattr(layer, meta.weight_name)
        scale = getattr(layer, meta.weight_scale_name)
        e, n, k = meta.experts, meta.shape_n, meta.shape_k
        lead = (e,) if meta.num_experts else ()
        if weight.dtype != torch.int32 or tuple(weight.shape) != lead + (n, k // 8):
            raise ValueError(f"humming: {meta.weight_name} must be int32 {lead + (n, k // 8)}, got {weight.dtype} "
                             f"{tuple(weight.shape)}")
        if tuple(scale.shape) != lead + (n, k // GROUP_SIZE):
            raise ValueError(f"humming: {meta.weight_scale_name} must have shape {lead + (n, k // GROUP_SIZE)}, got "
                             f"{tuple(scale.shape)}")
        device = weight.device if weight.is_cuda else torch.device("cuda", torch.cuda.current_device())
        with torch.cuda.device(device):
            packed = chord_kernels.pack_w4a16(weight.data.to(device).reshape(e, n, k // 8),
                                              scale.data.to(device).reshape(e, n, k // GROUP_SIZE))
        # Keep the experts as the first dimension: vLLM checks w13_weight.size(0) == E.
        setattr(layer, meta.weight_name,
                torch.nn.Parameter(packed.weight.view(e, -1) if meta.num_experts else packed.weight,
                                   requires_grad=False))
        setattr(layer, meta.weight_scale_name,
                torch.nn.Parameter(packed.scales.view(e, -1) if meta.num_experts else packed.scales,
                                   requires_grad=False))
        meta.packed_tag = packed.tag

    @classmethod
    def packed_weight(cls, layer: torch.nn.Module, sublayer_name: str = "") -> chord_kernels.W4A16Weight:
        meta: HummingLayerMeta = layer.humming_metas[sublayer_name]
        if meta.packed_tag is None:
            raise RuntimeError(f"humming: sublayer '{sublayer_name}' is not transformed "
                               "(call transform_humming_layer after loading)")
        return chord_kernels.W4A16Weight(getattr(layer, meta.weight_name), getattr(layer, meta.weight_scale_name),
                                         meta.packed_tag)

    @classmethod
    def get_default_tuning_configs(cls, layer: torch.nn.Module, use_f16_accum: bool = False,
                                   use_batch_invariant: bool = False, gemm_type: Any = GemmType.DENSE,
                                   sublayer_name: str = "", **kwargs) -> List[list]:
        """[min_m, max_m, config] rows over valid_shape_m (a row covers min_m < m <= max_m);
        config["block_shape"][0] is the moe_align_block_size block for the indexed GEMM (N
        and K tiles: chord's choice, 0). From the library's tuning table for the layer's GPU
        and shape when one exists (config["source"] == "tuning_table"), else from the mean
        routed rows per expert (chord_kernels.block_size_for_rows)."""
        if use_f16_accum:
            raise unsupported("use_f16_accum (VLLM_HUMMING_USE_F16_ACCUM=1): chord accumulates in fp32")
        if use_batch_invariant:
            raise unsupported("use_batch_invariant (VLLM_BATCH_INVARIANT=1)")
        _gemm_type(gemm_type)
        meta: HummingLayerMeta = layer.humming_metas[sublayer_name]
        rows = _library_rows(_arch_of(layer, meta), meta.experts, meta.shape_n, meta.shape_k)
        return rows if rows is not None else _tuning_rows(meta.experts)

    @classmethod
    def may_quant_input(cls, layer: torch.nn.Module, inputs: torch.Tensor,
                        input_scale: Optional[torch.Tensor] = None, quanted_input: Optional[torch.Tensor] = None,
                        sublayer_name: str = "", **kwargs) -> Tuple[torch.Tensor, None]:
        meta: HummingLayerMeta = layer.humming_metas[sublayer_name]
        if meta.a_dtype.num_bits != 16 or input_scale is not None:
            raise unsupported(f"input quantization to {meta.a_dtype}")
        return inputs, None

    @classmethod
    def forward_layer(cls, layer: torch.nn.Module, inputs: torch.Tensor, outputs: Optional[torch.Tensor] = None,
                      input_scale: Optional[torch.Tensor] = None, sorted_ids: Optional[torch.Tensor] = None,
                      expert_ids: Optional[torch.Tensor] = None, num_tokens_padded: Optional[torch.Tensor] = None,
                      expert_layout: Optional[torch.Tensor] = None, top_k: int = 1, valid_shape_m: int = 0,
                      compute_config: Any = None, tuning_config: Any = None, sublayer_name: str = "",
                      **kwargs) -> torch.Tensor:
        meta: HummingLayerMeta = layer.humming_metas[sublayer_name]
        packed = cls.packed_weight(layer, sublayer_name)
        inputs, _ = cls.may_quant_input(layer, inputs, input_scale, sublayer_name=sublayer_name)
        compute = _parse_json(compute_config, _compute_cache) or {}
        if compute.get("use_f16_accum") or compute.get("use_batch_invariant"):
            raise unsupported("use_f16_accum / use_batch_invariant in compute_config")
        if "gemm_type" in compute:
            gemm = _gemm_type(compute["gemm_type"])
        elif sorted_ids is not None:
            gemm = GemmType.INDEXED
        elif expert_layout is not None:
            gemm = GemmType.GROUPED_CONTIGUOUS
        else:
            gemm = GemmType.DENSE

        if gemm == GemmType.INDEXED:
            if sorted_ids is None or expert_ids is None or num_tokens_padded is None:
                raise ValueError("humming: the indexed GEMM needs sorted_ids, expert_ids and num_tokens_padded")
            rows = _parse_json(tuning_config, _tuning_cache) or _tuning_rows(meta.experts)
            block = _block_for(rows, valid_shape_m)
            return chord_kernels.indexed(inputs, packed, sorted_ids, expert_ids, num_tokens_padded, top_k, outputs,
                                         block_size=block)
        if gemm == GemmType.GROUPED_CONTIGUOUS:
            if expert_layout is None:
                raise ValueError("humming: grouped_contiguous needs expert_layout (expert_first_token_offset)")
            # vLLM's moe_permute gives E+1 first-row offsets; chord's offsets mode takes the E end rows.
            ends = expert_layout[1:] if expert_layout.shape[0] == meta.experts + 1 else expert_layout
            return chord_kernels.offsets(inputs, packed, ends.to(torch.int32), outputs)
        if gemm == GemmType.GROUPED_MASKED:
            if expert_layout is None:
                raise ValueError("humming: grouped_masked needs expert_layout (expert_num_tokens)")
            groups = expert_layout.shape[0]
            a = inputs.view(groups, -1, inputs.shape[-1])
            out = outputs.view(groups, a.shape[1], meta.shape_n) if outputs is not None else None
            expected = max(1, valid_shape_m // max(groups, 1)) if valid_shape_m else 0
            result = chord_kernels.masked(a, packed, expert_layout.to(torch.int32), expected, out)
            return result.view(-1, meta.shape_n) if inputs.dim() == 2 else result
        # Dense: one expert, every row.
        if meta.experts != 1:
            raise ValueError(f"humming: a dense GEMM needs a single-expert layer, this one has {meta.experts}")
        flat = inputs.reshape(-1, inputs.shape[-1])
        ends = torch.full((1,), flat.shape[0], dtype=torch.int32, device=flat.device)
        out = chord_kernels.offsets(flat, packed, ends, outputs.view(-1, meta.shape_n) if outputs is not None else None)
        return out.view(*inputs.shape[:-1], meta.shape_n)


class HummingMethod(HummingLayerMethod):
    """The class vLLM imports (humming.layer.HummingMethod)."""
