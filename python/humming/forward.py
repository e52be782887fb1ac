"""The per-call half of the humming contract on chord's operators:

- humming_forward: one GEMM of a transformed layer (dense, or an MoE sublayer in the
  indexed, grouped_contiguous or grouped_masked form);
- may_process_input: the pass between the two MoE GEMMs (activation, row layout), one
  kernel;
- may_quant_input: 16-bit activations pass through (input quantization is refused at load).

Every check reads tensor metadata only; nothing synchronizes the host, so the calls can be
captured in a CUDA Graph. `locks` is accepted and unused: no chord kernel coordinates CTAs
through global memory."""
import json
from typing import Any, Dict, Optional, Tuple

import torch

import chord_kernels
from humming import ops
from humming.config import GemmType, LayerConfig
from humming.schema.base import unsupported
from humming.tune import block_for, heuristic_rows

_parsed: Dict[str, Any] = {}


def _parse(value):
    """JSON strings (compute and tuning configs) parsed once each."""
    if value is None or isinstance(value, (dict, list)):
        return value
    parsed = _parsed.get(value)
    if parsed is None:
        parsed = json.loads(value) if value else None
        _parsed[value] = parsed
    return parsed


def _packed(config: LayerConfig, weight: torch.Tensor, weight_scale: Optional[torch.Tensor]):
    if not config.packed_tag:
        raise ValueError("humming (chord backend): the LayerConfig holds no packed weight; build it with "
                         "prepare_and_transform_humming_tensors")
    if weight_scale is None:
        raise ValueError("humming (chord backend): weight_scale is required (the packed scales)")
    return chord_kernels.W4A16Weight(weight, weight_scale, config.packed_tag)


def _check_dtype(packed, inputs: torch.Tensor, outputs: Optional[torch.Tensor]):
    """The call's activations and outputs are in the layer's dtype: the model dtype it was
    transformed for (bfloat16 or float16), which its packed weight's format names."""
    want = packed.dtype
    if inputs.dtype != want or (outputs is not None and outputs.dtype != want):
        got = f"inputs {inputs.dtype}" + ("" if outputs is None else f", outputs {outputs.dtype}")
        raise ValueError(f"humming (chord backend): this layer was transformed for {want} activations and outputs "
                         f"(prepare_and_transform_humming_tensors' torch_dtype, the model dtype); the call has {got}")


def may_quant_input(config: LayerConfig, inputs: torch.Tensor, input_scale: Optional[torch.Tensor] = None,
                    quanted_input: Optional[torch.Tensor] = None, use_pdl: Optional[bool] = None,
                    **kwargs) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    config.check_device(inputs.device)
    if input_scale is not None or config.input_quant_mode.should_quantize:
        raise unsupported("input quantization")
    return inputs, None


def may_process_input(config: LayerConfig, inputs: torch.Tensor, *, outputs: Optional[torch.Tensor] = None,
                      group_scales: Optional[torch.Tensor] = None, token_scales: Optional[torch.Tensor] = None,
                      activation_type: str = "none", activation_impl: Optional[str] = None,
                      hadamard_block_size: Optional[int] = None, layout: str = "normal",
                      expert_tokens: Optional[torch.Tensor] = None, scatter_idx: Optional[torch.Tensor] = None,
                      num_valid_tokens: Optional[torch.Tensor] = None, expert_layout: Optional[torch.Tensor] = None,
                      indices: Optional[torch.Tensor] = None, zero_invalid: bool = False,
                      m_major_scale: bool = False, use_pdl: Optional[bool] = None,
                      **kwargs) -> Tuple[torch.Tensor, None, None]:
    """Returns (inputs for the next GEMM, None, None): `inputs` itself when there is nothing
    to do, else `outputs` (allocated when None) written by one activation kernel (see
    humming.ops.process_input for the layouts)."""
    config.check_device(inputs.device)
    if layout not in ops.LAYOUTS:  # even when there is nothing to do: a caller's typo is an error
        raise unsupported(f"input layout '{layout}' (served: {', '.join(ops.LAYOUTS)})")
    if token_scales is not None or group_scales is not None or config.input_quant_mode.should_quantize:
        raise unsupported("input quantization")
    nothing_to_do = (activation_type in (None, "none") and not activation_impl and outputs is None
                     and scatter_idx is None and indices is None and num_valid_tokens is None
                     and (hadamard_block_size is None or hadamard_block_size <= 1))
    if nothing_to_do:
        return inputs, None, None
    return ops.process_input(
        inputs, outputs, activation_type=activation_type, activation_impl=activation_impl,
        hadamard_block_size=hadamard_block_size, layout=layout, expert_tokens=expert_tokens,
        expert_layout=expert_layout, scatter_idx=scatter_idx, indices=indices, num_valid_tokens=num_valid_tokens,
        zero_invalid=zero_invalid)


def _gemm_type(compute: Optional[dict], sorted_ids, expert_layout) -> GemmType:
    if compute and compute.get("gemm_type"):
        return GemmType(str(compute["gemm_type"]).lower())
    if sorted_ids is not None:
        return GemmType.INDEXED
    if expert_layout is not None:
        return GemmType.GROUPED_CONTIGUOUS
    return GemmType.DENSE


def humming_forward(config: LayerConfig, inputs: torch.Tensor, weight: torch.Tensor,
                    weight_scale: Optional[torch.Tensor] = None, zero_point: Optional[torch.Tensor] = None,
                    bias: Optional[torch.Tensor] = None, weight_scale_2: Optional[torch.Tensor] = None,
                    outputs: Optional[torch.Tensor] = None, input_scale: Optional[torch.Tensor] = None,
                    input_scale_2: Optional[torch.Tensor] = None, sorted_ids: Optional[torch.Tensor] = None,
                    expert_ids: Optional[torch.Tensor] = None, num_tokens_padded: Optional[torch.Tensor] = None,
                    expert_layout: Optional[torch.Tensor] = None, locks: Optional[torch.Tensor] = None,
                    top_k: int = 1, valid_shape_m: int = 0, compute_config: Any = None, tuning_config: Any = None,
                    hadamard_block_size: Optional[int] = None, use_pdl: Optional[bool] = None,
                    **kwargs) -> torch.Tensor:
    """outputs = inputs @ W^T for one transformed layer, in the GEMM type compute_config
    names (else: indexed with sorted_ids, grouped_contiguous with expert_layout, dense)."""
    del locks, use_pdl, kwargs
    for name, value in (("zero_point", zero_point), ("bias", bias), ("weight_scale_2", weight_scale_2),
                        ("input_scale", input_scale), ("input_scale_2", input_scale_2)):
        if value is not None:
            raise unsupported(f"'{name}' in a forward call (this layer was transformed without it)")
    if hadamard_block_size is not None and hadamard_block_size > 1:
        raise unsupported(f"Hadamard rotation (block {hadamard_block_size})")
    packed = _packed(config, weight, weight_scale)
    _check_dtype(packed, inputs, outputs)
    config.check_device(inputs.device)
    compute = _parse(compute_config) or {}
    if compute.get("use_f16_accum") or compute.get("use_batch_invariant"):
        raise unsupported("use_f16_accum / use_batch_invariant in compute_config")
    gemm = _gemm_type(compute, sorted_ids, expert_layout)
    n = config.shape_n

    if gemm == GemmType.INDEXED:
        if sorted_ids is None or expert_ids is None or num_tokens_padded is None:
            raise ValueError("humming (chord backend): the indexed GEMM needs sorted_ids, expert_ids and "
                             "num_tokens_padded")
        # Empty rows are rows: the caller's lookup over them fell back as block_for does.
        parsed = _parse(tuning_config)
        rows = parsed if parsed is not None else heuristic_rows(config.experts)
        block = block_for(rows, valid_shape_m)
        return chord_kernels.indexed(inputs, packed, sorted_ids, expert_ids, num_tokens_padded, top_k, outputs,
                                     block_size=block)
    if gemm == GemmType.GROUPED_CONTIGUOUS:
        if expert_layout is None:
            raise ValueError("humming (chord backend): grouped_contiguous needs expert_layout "
                             "(expert_first_token_offset, E + 1 entries)")
        # E + 1 first-row offsets (vLLM's moe_permute) -> the E end rows chord's offsets mode takes.
        # Anything else (E start or end rows alone would read the same) is refused, not guessed.
        if tuple(expert_layout.shape) != (config.experts + 1,) or expert_layout.is_floating_point() or \
                expert_layout.dtype == torch.bool:
            raise ValueError(f"humming (chord backend): grouped_contiguous expert_layout must be the E + 1 = "
                             f"{config.experts + 1} integer first-row offsets, got {expert_layout.dtype} "
                             f"{tuple(expert_layout.shape)}")
        ends = expert_layout[1:]
        if ends.dtype != torch.int32:
            ends = ends.to(torch.int32)
        return chord_kernels.offsets(inputs, packed, ends, outputs)
    if gemm == GemmType.GROUPED_MASKED:
        if expert_layout is None:
            raise ValueError("humming (chord backend): grouped_masked needs expert_layout (expert_num_tokens)")
        groups = expert_layout.shape[0]
        if groups < 1 or inputs.dim() == 2 and inputs.shape[0] % groups:
            raise ValueError(f"humming (chord backend): grouped_masked takes {groups} groups of equal rows; "
                             f"inputs has {inputs.shape[0]} rows")
        a = inputs.view(groups, -1, inputs.shape[-1])
        out = outputs.view(groups, a.shape[1], n) if outputs is not None else None
        counts = expert_layout if expert_layout.dtype == torch.int32 else expert_layout.to(torch.int32)
        expected = max(1, valid_shape_m // max(groups, 1)) if valid_shape_m else 0
        result = chord_kernels.masked(a, packed, counts, expected, out)
        return result.view(-1, n) if inputs.dim() == 2 else result
    # Dense: one expert, every row.
    if config.experts != 1:
        raise ValueError(f"humming (chord backend): a dense GEMM needs a single-expert layer, this one has "
                         f"{config.experts}")
    flat = inputs.reshape(-1, inputs.shape[-1])
    ends = torch.full((1,), flat.shape[0], dtype=torch.int32, device=flat.device)
    out = chord_kernels.offsets(flat, packed, ends, outputs.view(-1, n) if outputs is not None else None)
    return out.view(*inputs.shape[:-1], n)


__all__ = ["humming_forward", "may_process_input", "may_quant_input"]
