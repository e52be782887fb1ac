"""process_input: the one pass over a GEMM's input that the humming contract allows between
two GEMMs (here: the activation of the gate_up output and the row layout of the down
input), on chord's activation kernel. Input quantization and Hadamard rotation are not
computed by chord and are refused."""
from typing import Optional, Tuple

import torch

import chord_kernels
from humming.schema.base import unsupported

# What the activation "none" computes: a copy in the requested row layout.
IDENTITY = "a"
LAYOUTS = ("normal", "scatter", "grouped_mask")


def _as_int32(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """Index tensors as the kernel reads them; a device-side cast, no host sync."""
    if t is None:
        return None
    t = t.reshape(-1) if t.dim() != 2 else t
    return t if t.dtype == torch.int32 and t.is_contiguous() else t.to(torch.int32).contiguous()


def process_input(
    inputs: torch.Tensor,
    outputs: Optional[torch.Tensor] = None,
    *,
    quant_mode: str = "none",
    quant_dtype=None,
    quant_group_size: Optional[int] = None,
    group_scales: Optional[torch.Tensor] = None,
    group_scale_dtype=None,
    token_scales: Optional[torch.Tensor] = None,
    activation_type: str = "none",
    activation_impl: Optional[str] = None,
    hadamard_block_size: Optional[int] = None,
    layout: str = "normal",
    expert_layout: Optional[torch.Tensor] = None,
    expert_tokens: Optional[torch.Tensor] = None,
    scatter_idx: Optional[torch.Tensor] = None,
    indices: Optional[torch.Tensor] = None,
    num_valid_tokens: Optional[torch.Tensor] = None,
    zero_invalid: bool = False,
    **kwargs,
) -> Tuple[torch.Tensor, None, None]:
    """outputs[dst] = act(inputs[src]) in one kernel; returns (outputs, None, None).

    activation_type: "none" (copy), "unary" (activation_impl in a), "binary_split" (a the
    first half of the row, b the second) or "binary_interleaved" (a, b alternate).
    layout: "normal" (dst = src), "scatter" (scatter_idx [rows, C] or [rows * C]: row r goes to
    every scatter_idx[r, c] >= 0) or "grouped_mask" (rows are E equal blocks, expert_tokens
    [E] valid rows each). num_valid_tokens (one device int): rows, or scatter destinations,
    from there on are skipped. Rows not written keep outputs' contents."""
    if quant_mode not in (None, "none", "disabled") or quant_dtype is not None or group_scales is not None or \
            token_scales is not None:
        raise unsupported("input quantization")
    if hadamard_block_size is not None and hadamard_block_size > 1:
        raise unsupported(f"Hadamard rotation (block {hadamard_block_size})")
    if zero_invalid:
        raise unsupported("zero_invalid input processing")
    if layout not in LAYOUTS:
        raise unsupported(f"input layout '{layout}' (served: {', '.join(LAYOUTS)})")
    scatter_idx = scatter_idx if scatter_idx is not None else indices
    expert_tokens = expert_tokens if expert_tokens is not None else expert_layout
    if activation_type in (None, "none"):
        if activation_impl:
            raise ValueError("humming (chord backend): activation_impl given with activation_type 'none'")
        kind, expression = "unary", IDENTITY
    else:
        if not activation_impl:
            raise ValueError(f"humming (chord backend): activation_type '{activation_type}' needs activation_impl")
        kind, expression = activation_type, activation_impl
    a = inputs.reshape(-1, inputs.shape[-1])
    if layout == "scatter":
        if scatter_idx is None:
            raise ValueError("humming (chord backend): the scatter layout needs scatter_idx")
    elif scatter_idx is not None:
        raise ValueError(f"humming (chord backend): scatter_idx given with layout '{layout}'")
    if layout == "grouped_mask" and expert_tokens is None:
        raise ValueError("humming (chord backend): the grouped_mask layout needs expert_tokens")
    out2d = None if outputs is None else outputs.view(-1, outputs.shape[-1])
    result = chord_kernels.moe_activation(
        a, kind, expression, out=out2d, scatter_idx=_as_int32(scatter_idx) if layout == "scatter" else None,
        group_rows=_as_int32(expert_tokens) if layout == "grouped_mask" else None,
        num_valid=_as_int32(num_valid_tokens))
    return (outputs if outputs is not None else result), None, None


__all__ = ["process_input"]
