"""Routing helpers in plain torch, with static output sizes and no host synchronization
(so they trace under torch.compile and capture in a CUDA Graph).

moe_align_block_size builds the routing the indexed GEMM reads, in the layout of vLLM's
op of the same name: routes sorted by local expert, each expert's segment padded to
block_size with the sentinel M * top_k, one expert id per block (-1 past the used blocks).
Routes to experts that are not local (expert_map[e] < 0) are left out, and so are invalid
ids: -1 (the padding rows of an all-to-all that pads its receive buffer) and any id outside
the expert range, as vLLM's op does with ignore_invalid_experts. Checking them on the host
would synchronize, and an out-of-range gather on the device would abort the process.
"""
from typing import Optional, Tuple

import torch


def routing_capacity(num_routes: int, num_experts: int, block_size: int) -> int:
    """Upper bound of the padded route count: every expert may waste block_size - 1 slots, and
    every block holds at least one route (an expert without routes gets no block), so with fewer
    routes than experts num_routes * block_size is the smaller bound (vLLM's op caps it the same
    way). The indexed GEMM launches one M tile per block_m slots of it, so a loose bound costs
    CTAs that only read num_tokens_padded and exit: 1 token x top-8 over 48 experts in blocks of
    16 is 128 slots, not 736."""
    capacity = -(-(num_routes + num_experts * (block_size - 1)) // block_size) * block_size
    return min(capacity, num_routes * block_size)


def local_expert_ids(flat_ids: torch.Tensor, expert_map: Optional[torch.Tensor]) -> torch.Tensor:
    """Global expert ids (int64) -> local ids, -1 for an id that is negative or past the
    map (the gather would wrap a negative index or run out of bounds) or not on this rank."""
    if expert_map is None:
        return flat_ids
    inside = (flat_ids >= 0) & (flat_ids < expert_map.numel())
    mapped = expert_map.long()[torch.where(inside, flat_ids, torch.zeros_like(flat_ids))]
    return torch.where(inside, mapped, torch.full_like(mapped, -1))


def _integer_tensor(t, name):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"chord_kernels: '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"chord_kernels: '{name}' must hold integer expert ids, got {t.dtype}")


def _check_routing_args(topk_ids, block_size, num_experts, expert_map):
    """Metadata only (no values read: the routing stays free of host synchronization)."""
    _integer_tensor(topk_ids, "topk_ids")
    if expert_map is not None:
        _integer_tensor(expert_map, "expert_map")
        # One id per global expert: a 2-D map would pass the bounds test on its element count
        # and then be gathered along its first dimension, out of bounds on the device.
        if expert_map.dim() != 1:
            raise ValueError(f"chord_kernels: 'expert_map' must be 1-D (one local id per global expert), got shape "
                             f"{tuple(expert_map.shape)}")
        if expert_map.device != topk_ids.device:
            raise ValueError(f"chord_kernels: 'topk_ids' is on {topk_ids.device}, 'expert_map' on {expert_map.device}")
    for value, name in ((block_size, "block_size"), (num_experts, "num_experts")):
        if isinstance(value, (bool, torch.Tensor)) or not hasattr(value, "__index__"):
            raise TypeError(f"chord_kernels: '{name}' must be an int, got {type(value).__name__}")
    if block_size < 8 or block_size > 1024 or block_size % 8:
        raise ValueError(f"chord_kernels: block_size must be a multiple of 8 in 8..1024 (the indexed GEMM's "
                         f"alignment), got {block_size}")
    if num_experts < 1:
        raise ValueError(f"chord_kernels: num_experts must be >= 1, got {num_experts}")


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: Optional[torch.Tensor] = None
                         ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """topk_ids [M, top_k] (global expert ids) -> (sorted_ids int32 [capacity],
    expert_ids int32 [capacity / block_size], num_tokens_padded int32 [1]).

    num_experts: local experts (rows of the packed weight); expert_map: global -> local
    expert id (-1 = not on this rank), or None when global ids are local ids. Routes whose
    id is -1 or out of range are dropped, like non-local ones.
    """
    _check_routing_args(topk_ids, block_size, num_experts, expert_map)
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    num_routes = flat.numel()
    local = local_expert_ids(flat, expert_map)
    # Dropped routes go to a bucket past the last expert and are cut off below.
    bucket = torch.where((local >= 0) & (local < num_experts), local, torch.full_like(local, num_experts))
    counts = torch.zeros(num_experts + 1, dtype=torch.long, device=device)
    counts.scatter_add_(0, bucket, torch.ones_like(bucket))
    counts = counts[:num_experts]
    padded = (counts + block_size - 1) // block_size * block_size
    seg_start = torch.cumsum(padded, 0) - padded
    first_of = torch.cumsum(counts, 0) - counts

    order = torch.sort(bucket, stable=True).indices
    sorted_bucket = bucket[order]
    valid = sorted_bucket < num_experts
    expert_of = torch.where(valid, sorted_bucket, torch.zeros_like(sorted_bucket))
    rank = torch.arange(num_routes, device=device) - first_of[expert_of]
    capacity = routing_capacity(num_routes, num_experts, block_size)
    # Invalid routes are written to one trash slot past the end and sliced off.
    pos = torch.where(valid, seg_start[expert_of] + rank, torch.full_like(rank, capacity))
    sorted_ids = torch.full((capacity + 1,), num_routes, dtype=torch.int32, device=device)
    sorted_ids.scatter_(0, pos, order.to(torch.int32))
    sorted_ids = sorted_ids[:capacity]

    blocks = capacity // block_size
    block_end = torch.cumsum(padded // block_size, 0)
    block_index = torch.arange(blocks, device=device)
    owner = torch.searchsorted(block_end, block_index, right=True)
    expert_ids = torch.where(owner < num_experts, owner, torch.full_like(owner, -1)).to(torch.int32)
    num_tokens_padded = padded.sum().reshape(1).to(torch.int32)
    return sorted_ids, expert_ids, num_tokens_padded


BLOCK_POLICIES = ("auto", "decode", "prefill")

# The routing blocks, smallest first, and the headroom over the mean rows per expert that a
# block is sized for: chord's resolver sizes its M tile for 1.5x the mean (routing is ragged)
# and needs the tile to divide the block; blocks above 64 rows pad too many rows at MoE batch
# sizes. The `humming` facade's rows (humming.tune.heuristic_rows) are this rule over routed
# rows.
ROUTING_BLOCKS = (16, 32, 64)
ROWS_HEADROOM = 1.5


def block_size_for_rows(rows_per_expert: float, block_policy: str = "auto") -> int:
    """The routing block (and so the largest GEMM M tile) for a mean of rows_per_expert
    routed rows per local expert: the smallest of ROUTING_BLOCKS that holds ROWS_HEADROOM
    times the mean, else the largest.

    block_policy: "auto" (from the rows), "decode" (16) or "prefill" (64).
    """
    if block_policy == "decode":
        return ROUTING_BLOCKS[0]
    if block_policy == "prefill":
        return ROUTING_BLOCKS[-1]
    if block_policy != "auto":
        raise ValueError(f"chord_kernels: unknown block_policy '{block_policy}'; use 'auto', 'decode' or 'prefill'")
    rows = rows_per_expert * ROWS_HEADROOM
    for block in ROUTING_BLOCKS[:-1]:
        if rows <= block:
            return block
    return ROUTING_BLOCKS[-1]
