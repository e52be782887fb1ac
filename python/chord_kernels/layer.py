"""IndexedW4A16Layer: the experts of one MoE projection, packed for chord's indexed GEMM."""
import warnings
from typing import Optional

import torch

from . import _ops
from .routing import block_size_for_rows, moe_align_block_size


class IndexedW4A16Layer(torch.nn.Module):
    """num_experts x [n, k] INT4 weights, run on moe_align_block_size routing.

    block_policy: "auto" picks the routing block per batch from the mean routed rows per
    expert; "decode" / "prefill" fix it (16 / 64 rows). `profile=` is its deprecated name.
    The packed buffers are registered as buffers, so .to() / state_dict() carry them; the
    tag is plain Python ints.
    """

    def __init__(self, num_experts: int, n: int, k: int, block_policy: str = "auto",
                 device: Optional[torch.device] = None, *, profile: Optional[str] = None):
        super().__init__()
        if profile is not None:
            warnings.warn("IndexedW4A16Layer(profile=...) is deprecated: use block_policy=", DeprecationWarning,
                          stacklevel=2)
            block_policy = profile
        if n % _ops.PACK_N or k % _ops.PACK_K or num_experts < 1:
            raise ValueError(f"chord_kernels: IndexedW4A16Layer needs E >= 1, N % {_ops.PACK_N} == 0 and "
                             f"K % {_ops.PACK_K} == 0, got E={num_experts} N={n} K={k}")
        block_size_for_rows(1.0, block_policy)  # rejects an unknown policy now, not at forward
        self.num_experts, self.n, self.k = int(num_experts), int(n), int(k)
        self.block_policy = block_policy
        device = torch.device(device) if device is not None else None
        self.register_buffer("packed_weight", torch.empty(0, dtype=torch.uint8, device=device))
        self.register_buffer("packed_scales", torch.empty(0, dtype=torch.uint8, device=device))
        self.tag = None

    def load_weight(self, weight: torch.Tensor, scale: torch.Tensor, group_size: int = _ops.GROUP_SIZE, *,
                    dtype: torch.dtype = torch.bfloat16, zero_point: Optional[torch.Tensor] = None) -> None:
        """weight: codes [E, N, K] (uint8/int32) or the checkpoint's compressed-tensors int32
        [E, N, K/8] (inferred from the last dimension); scale [E, N, K/group_size]
        (pack_w4a16's group sizes); dtype: the scales' and the activations' dtype; zero_point:
        None (symmetric) or [E, N, K/group_size] 0..15 (pack_w4a16's)."""
        expected_last = (self.k, self.k // 8)
        if weight.dim() != 3 or tuple(weight.shape[:2]) != (self.num_experts, self.n) \
                or weight.shape[2] not in expected_last:
            raise ValueError(f"chord_kernels: weight must be [{self.num_experts}, {self.n}, {self.k}] codes or "
                             f"[{self.num_experts}, {self.n}, {self.k // 8}] int32, got {tuple(weight.shape)}")
        # pack_w4a16 takes K from the scales and the group size: it must be the layer's K.
        if not isinstance(scale, torch.Tensor):
            raise TypeError(f"chord_kernels: 'scale' must be a torch.Tensor, got {type(scale).__name__}")
        if scale.dim() not in (2, 3) or scale.shape[-1] * group_size != self.k:
            raise ValueError(f"chord_kernels: scale must be [{self.num_experts}, {self.n}, K / group_size] with "
                             f"K = {self.k} (group_size {group_size}), got "
                             f"{tuple(scale.shape)}")
        device = self.packed_weight.device if self.packed_weight.is_cuda else weight.device
        if device.type != "cuda":
            device = torch.device("cuda", torch.cuda.current_device())
        with torch.cuda.device(device):
            packed = _ops.pack_w4a16(weight.to(device), scale.to(device), group_size, dtype=dtype,
                                     zero_point=None if zero_point is None else zero_point.to(device))
        self.packed_weight = packed.weight
        self.packed_scales = packed.scales
        self.tag = packed.tag

    @property
    def packed(self) -> _ops.W4A16Weight:
        if self.tag is None:
            raise RuntimeError("chord_kernels: IndexedW4A16Layer has no weights yet (call load_weight)")
        return _ops.W4A16Weight(self.packed_weight, self.packed_scales, self.tag)

    def block_size(self, num_routes: int) -> int:
        return block_size_for_rows(num_routes / self.num_experts, self.block_policy)

    def align(self, topk_ids: torch.Tensor, expert_map: Optional[torch.Tensor] = None):
        """Routing for forward(): (sorted_ids, expert_ids, num_tokens_padded, block_size)."""
        block = self.block_size(topk_ids.numel())
        sorted_ids, expert_ids, ntp = moe_align_block_size(topk_ids, block, self.num_experts, expert_map)
        return sorted_ids, expert_ids, ntp, block

    def forward(self, inputs: torch.Tensor, sorted_ids: torch.Tensor, expert_ids: torch.Tensor,
                num_tokens_padded: torch.Tensor, top_k: int, block_size: int,
                outputs: Optional[torch.Tensor] = None) -> torch.Tensor:
        return _ops.indexed(inputs, self.packed, sorted_ids, expert_ids, num_tokens_padded, top_k, outputs,
                            block_size=block_size)

    def dequantize(self) -> torch.Tensor:
        return _ops.dequantize(self.packed)
