"""An MoE layer's forward pass on chord's INT4 kernels, with vLLM's routing.

    python examples/moe_indexed.py

Each token goes to its top-k experts. chord_kernels.moe_align_block_size sorts the routes
by expert in the layout of vLLM's op of that name; chord_kernels.indexed runs the gate_up
and then the down projection of every expert on those routes (INT4 group-32 weights, BF16
activations); the top-k rows of each token are summed with the router's weights. The same
layer in torch, on the same quantized weights, is the reference.

Prints the error against the reference and exits 0 when it is within 1e-2 (relative); 1
when not; 77, with a message, when there is no CUDA GPU.
"""
import sys

import torch

from _common import report, require_gpu

require_gpu(__file__)

import chord_kernels as ck  # noqa: E402

TOKENS, HIDDEN, INTERMEDIATE, EXPERTS, TOP_K = 64, 1024, 512, 8, 2


def quantize_int4(w):
    """[E, N, K] -> codes uint8 [E, N, K] (0..15) and scales bf16 [E, N, K/32]: symmetric
    INT4 per 32 weights along K, w ~ (code - 8) * scale."""
    groups = w.float().unflatten(-1, (-1, 32))
    scales = (groups.abs().amax(-1) / 7).clamp_min(1e-8).to(torch.bfloat16)
    codes = (groups / scales.float().unsqueeze(-1)).round().clamp(-8, 7) + 8
    return codes.to(torch.uint8).flatten(-2), scales


def dequantize_int4(codes, scales):
    """The weight the kernels multiply by: bf16((code - 8) * scale)."""
    return ((codes.float() - 8) * scales.float().repeat_interleave(32, -1)).to(torch.bfloat16)


def silu_and_mul(gate_up):
    gate, up = gate_up.float().chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up).to(torch.bfloat16)


def reference(x, topk_ids, topk_weights, w13, w2):
    """The layer in torch, expert by expert, rounding to bf16 where the kernels do."""
    routes = topk_ids.flatten().long()  # route token * TOP_K + k goes to expert routes[...]
    rows = x.repeat_interleave(TOP_K, 0).float()
    down = torch.empty(routes.numel(), HIDDEN, device=x.device)
    for e in range(EXPERTS):
        r = (routes == e).nonzero().flatten()
        h = silu_and_mul((rows[r] @ w13[e].float().T).to(torch.bfloat16))
        down[r] = (h.float() @ w2[e].float().T).to(torch.bfloat16).float()
    return (down.view(TOKENS, TOP_K, HIDDEN) * topk_weights.unsqueeze(-1)).sum(1)


def main():
    torch.manual_seed(0)
    x = torch.randn(TOKENS, HIDDEN, device="cuda").to(torch.bfloat16)
    router = torch.randn(HIDDEN, EXPERTS, device="cuda") / HIDDEN**0.5
    # Each expert's gate and up projections stacked along N, as vLLM's w13 is.
    w13 = torch.randn(EXPERTS, 2 * INTERMEDIATE, HIDDEN, device="cuda") / HIDDEN**0.5
    w2 = torch.randn(EXPERTS, HIDDEN, INTERMEDIATE, device="cuda") / INTERMEDIATE**0.5

    # Load time: quantize, then pack once into chord's layout.
    w13_codes, w13_scales = quantize_int4(w13)
    w2_codes, w2_scales = quantize_int4(w2)
    w13_packed = ck.pack_w4a16(w13_codes, w13_scales)
    w2_packed = ck.pack_w4a16(w2_codes, w2_scales)
    w13_dq, w2_dq = dequantize_int4(w13_codes, w13_scales), dequantize_int4(w2_codes, w2_scales)
    assert torch.equal(ck.dequantize(w13_packed), w13_dq)  # the packed weight holds exactly these

    # Routing: softmax over the router's logits, the top-k experts of each token.
    topk_weights, topk_ids = torch.softmax(x.float() @ router, dim=-1).topk(TOP_K, dim=-1)
    topk_weights /= topk_weights.sum(-1, keepdim=True)
    topk_ids = topk_ids.to(torch.int32)
    # Routes (token * TOP_K + k) sorted by expert, each expert's run padded to `block` rows,
    # one expert id per block: what vLLM's moe_align_block_size gives.
    block = ck.block_size_for_rows(TOKENS * TOP_K / EXPERTS)
    sorted_ids, expert_ids, num_tokens_padded = ck.moe_align_block_size(topk_ids, block, EXPERTS)

    # gate_up: route id reads row id // TOP_K of x and writes row id of the output.
    gate_up = ck.indexed(x, w13_packed, sorted_ids, expert_ids, num_tokens_padded, TOP_K, block_size=block)
    h = silu_and_mul(gate_up)  # [TOKENS * TOP_K, INTERMEDIATE]
    # down: the inputs are the routes' rows themselves, so top_k = 1.
    down = ck.indexed(h, w2_packed, sorted_ids, expert_ids, num_tokens_padded, 1, block_size=block)
    out = (down.float().view(TOKENS, TOP_K, HIDDEN) * topk_weights.unsqueeze(-1)).sum(1).to(torch.bfloat16)

    ref = reference(x, topk_ids, topk_weights, w13_dq, w2_dq)
    print(f"MoE forward: {TOKENS} tokens, top-{TOP_K} of {EXPERTS} experts, hidden {HIDDEN}, "
          f"intermediate {INTERMEDIATE}, routing block {block}")
    return report(out, ref)


if __name__ == "__main__":
    sys.exit(main())
