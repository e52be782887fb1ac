"""Tuning rows for a transformed layer: [min_m, max_m, config] over valid_shape_m (the routed
rows on this rank), a row covering min_m < m <= max_m. config["block_shape"][0] is the
moe_align_block_size block for the indexed GEMM; chord picks its tiles itself. The first row
starts at -1 so that it also covers m = 0 (a caller that finds no row falls back to block 64,
and both GEMMs must see the block moe_align used).

Rows come from the library's measured tuning table for the layer's GPU and shape
(config["source"] == "tuning_table") where one exists, else from the rule that sizes the
block to the mean routed rows per expert."""
import json
from typing import Any, List, Optional

import torch

import chord_kernels
from chord_kernels.routing import ROUTING_BLOCKS, ROWS_HEADROOM
from humming.config import GemmType, LayerConfig
from humming.schema.base import unsupported

_NO_ROWS_LIMIT = 1 << 62


def heuristic_rows(num_experts: int) -> List[list]:
    """chord_kernels.block_size_for_rows's rule over routed rows: block 16 / 32 / 64 by the
    mean routed rows per expert, with its headroom for skew."""
    rows, lower = [], -1
    for block in ROUTING_BLOCKS[:-1]:
        upper = int(block * num_experts / ROWS_HEADROOM)
        if upper > lower:
            rows.append([lower, upper, {"block_shape": [block, 0, 0], "backend": "chord"}])
            lower = upper
    rows.append([lower, _NO_ROWS_LIMIT, {"block_shape": [ROUTING_BLOCKS[-1], 0, 0], "backend": "chord"}])
    return rows


def arch_name(device_index: Optional[int]) -> Optional[str]:
    """chord's arch name (its tables are per arch) of a GPU; None without one (the library
    then reads sm_90a's)."""
    if device_index is None:
        if not torch.cuda.is_available():
            return None
        device_index = torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(device_index)
    family = (major, minor) == (9, 0) or major in (10, 12)  # arch-specific ("a") targets
    return f"sm_{major}{minor}{'a' if family else ''}"


def table_rows(arch: Optional[str], num_experts: int, n: int, k: int) -> Optional[List[list]]:
    """The library's tuning table for the shape as rows over routed rows, or None. Exported
    with top_k = 1 so that its M is routed rows; its inclusive [min, max] ranges become
    (min - 1, max] ones."""
    try:
        text = chord_kernels.tuning_table_json(arch, num_experts, n, k, 1)
    except ValueError:  # an arch the library does not know: keep the rule
        return None
    if text is None:
        return None
    rows = []
    for first, last, config in json.loads(text):
        entry = {"block_shape": [int(config["block_size_m"]), 0, 0], "backend": "chord", "source": "tuning_table"}
        entry.update({key: config[key] for key in ("engine", "block_m", "block_n", "block_k", "stages") if key in config})
        rows.append([int(first) - 1 if rows else -1, int(last), entry])
    return rows or None


# The block a caller (vLLM's indexed experts) uses when no row covers its m.
FALLBACK_BLOCK = 64


def block_for(rows: List[list], valid_shape_m: int) -> int:
    """The routing block of the row covering valid_shape_m, found as vLLM finds it."""
    if not isinstance(rows, list):
        raise ValueError(f"humming (chord backend): tuning rows must be a list, got {type(rows).__name__}")
    for row in rows:
        if not (isinstance(row, (list, tuple)) and len(row) == 3 and isinstance(row[2], dict)
                and isinstance(row[2].get("block_shape"), (list, tuple)) and row[2]["block_shape"]):
            raise ValueError(f"humming (chord backend): a tuning row must be [lower, upper, {{'block_shape': "
                             f"[block, ...], ...}}], got {row!r}")
        lower, upper, config = row
        if lower < valid_shape_m <= upper:
            return int(config["block_shape"][0])
    return FALLBACK_BLOCK


def get_heuristics_config(layer_config: LayerConfig, use_f16_accum: bool = False, use_batch_invariant: bool = False,
                          gemm_type: Any = GemmType.INDEXED, **kwargs) -> List[list]:
    """Tuning rows for `layer_config` (see the module docstring). f16 accumulation and
    batch-invariant schedules are refused: chord accumulates in FP32 with one schedule per
    shape."""
    if use_f16_accum:
        raise unsupported("use_f16_accum (VLLM_HUMMING_USE_F16_ACCUM=1): chord accumulates in FP32")
    if use_batch_invariant:
        raise unsupported("use_batch_invariant (VLLM_BATCH_INVARIANT=1)")
    GemmType(getattr(gemm_type, "value", gemm_type))
    experts = layer_config.experts
    rows = table_rows(arch_name(layer_config.device_index), experts, layer_config.shape_n, layer_config.shape_k)
    return rows if rows is not None else heuristic_rows(experts)


__all__ = ["block_for", "get_heuristics_config", "heuristic_rows", "table_rows"]
