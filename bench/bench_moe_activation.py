"""The MoE activation between the two GEMMs, as vLLM's Humming experts run it: one
activation kernel (may_process_input with the SiLU expression) against the unfused torch
sequence (silu, mul, copy), each inside the whole gate_up -> activation -> down chain of
the indexed experts. One process, the two chains interleaved rep by rep, L2 flushed before
each, CUDA events, medians. Writes a JSON of the rows.

    python bench/bench_moe_activation.py --out results.json
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_w4a16 import l2_flush_buffer, time_interleaved_us  # noqa: E402

import chord_kernels as ck  # noqa: E402
from humming.forward import humming_forward, may_process_input  # noqa: E402
from humming.schema import HummingWeightSchema  # noqa: E402
from humming.transform import prepare_and_transform_humming_tensors  # noqa: E402
from humming.tune import block_for, get_heuristics_config  # noqa: E402
from humming.utils.weight import pack_int4  # noqa: E402

SILU = {"activation_type": "binary_split", "activation_impl": "(a / (1.f + expf(-a))) * b"}
# (name, hidden, expert width, local experts, global experts, top_k, tokens on the rank)
ROWS = [
    ("EP8 decode T=20", 7168, 2048, 48, 384, 8, 20 * 8),
    ("EP8 decode T=64", 7168, 2048, 48, 384, 8, 64 * 8),
    ("EP8 prefill T=1024", 7168, 2048, 48, 384, 8, 1024 * 8),
    ("Qwen3-30B-A3B T=8", 2048, 768, 128, 128, 8, 8),
    ("Qwen3-30B-A3B T=4096", 2048, 768, 128, 128, 8, 4096),
]


def sublayer(e, n, k, gen):
    codes = torch.randint(0, 16, (e, n, k), dtype=torch.uint8, device="cuda", generator=gen)
    scale = (torch.rand(e, n, k // 32, device="cuda", generator=gen) * 0.01 + 0.002).to(torch.bfloat16)
    schema = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32)
    config, t = prepare_and_transform_humming_tensors({"weight": pack_int4(codes), "weight_scale": scale}, n, k,
                                                      schema, num_experts=e, device=torch.device("cuda"))
    return config, t


def run_row(name, hidden, inter, local, global_experts, top_k, tokens, flush, reps):
    gen = torch.Generator(device="cuda").manual_seed(1)
    cfg13, t13 = sublayer(local, 2 * inter, hidden, gen)
    cfg2, t2 = sublayer(local, hidden, inter, gen)
    x = torch.randn(tokens, hidden, device="cuda", generator=gen).to(torch.bfloat16)
    scores = torch.rand(tokens, global_experts, device="cuda", generator=gen)
    topk_ids = scores.topk(top_k, dim=1).indices.to(torch.int32)
    expert_map = None
    if global_experts != local:
        expert_map = torch.full((global_experts,), -1, dtype=torch.int32, device="cuda")
        expert_map[:local] = torch.arange(local, dtype=torch.int32, device="cuda")
    valid_shape_m = math.ceil(topk_ids.numel() * local / global_experts)
    rows13 = get_heuristics_config(layer_config=cfg13, gemm_type="indexed")
    rows2 = get_heuristics_config(layer_config=cfg2, gemm_type="indexed")
    block = block_for(rows13, valid_shape_m)
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, block, local, expert_map)
    common = dict(sorted_ids=sorted_ids, expert_ids=expert_ids, num_tokens_padded=ntp, valid_shape_m=valid_shape_m,
                  compute_config='{"gemm_type": "indexed"}')
    routes = tokens * top_k
    gate_up = torch.empty(routes, 2 * inter, dtype=torch.bfloat16, device="cuda")
    down_in = torch.empty(routes, inter, dtype=torch.bfloat16, device="cuda")
    down_out = torch.empty(routes, hidden, dtype=torch.bfloat16, device="cuda")

    def gemm13():
        humming_forward(cfg13, x, t13["weight"], t13["weight_scale"], outputs=gate_up, top_k=top_k,
                        tuning_config=rows13, **common)

    def gemm2():
        humming_forward(cfg2, down_in, t2["weight"], t2["weight_scale"], outputs=down_out, top_k=1,
                        tuning_config=rows2, **common)

    def fused_act():
        may_process_input(cfg2, gate_up, outputs=down_in, **SILU)

    def torch_act():
        down_in.copy_(torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:])

    def chain(act):
        def run():
            gemm13()
            act()
            gemm2()
        return run

    gemm13()
    fused_act()
    check = down_in.clone()
    torch_act()
    # Both activations agree to bf16 rounding (torch rounds silu(a) before the product).
    err = ((check.float() - down_in.float()).abs().max() / down_in.float().abs().max().clamp_min(1e-30)).item()
    fused_chain, torch_chain, fused_only, torch_only = time_interleaved_us(
        [chain(fused_act), chain(torch_act), fused_act, torch_act], flush, reps=reps)
    moved_bytes = routes * 2 * inter * 2 + routes * inter * 2  # gate_up read + activation written
    return {"row": name, "tokens": tokens, "routes": routes, "fused_chain_us": fused_chain,
            "torch_chain_us": torch_chain, "chain_ratio": fused_chain / torch_chain, "fused_act_us": fused_only,
            "torch_act_us": torch_only, "act_ratio": fused_only / torch_only,
            "fused_act_floor_fraction": moved_bytes / 4.47e12 / (fused_only * 1e-6), "max_rel_diff": err}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="bench_moe_activation.json")
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    flush = l2_flush_buffer()
    results = []
    for row in ROWS:
        r = run_row(*row, flush=flush, reps=args.reps)
        results.append(r)
        print(f"{r['row']:24s} chain fused {r['fused_chain_us']:8.1f} us  torch {r['torch_chain_us']:8.1f} us  "
              f"ratio {r['chain_ratio']:.3f} | activation {r['fused_act_us']:7.1f} vs {r['torch_act_us']:7.1f} us "
              f"({r['act_ratio']:.3f}, {100 * r['fused_act_floor_fraction']:.0f}% of the memory floor) "
              f"diff {r['max_rel_diff']:.1e}", flush=True)
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
