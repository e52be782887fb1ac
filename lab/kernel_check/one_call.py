"""One library call per projection of a heavy row of the suite (docs/shapes.md), inside an NVTX
range "prof", for ncu (`--nvtx --nvtx-include prof/`): every kernel is compiled and warmed up
before the range.

    python3 lab/kernel_check/one_call.py tp8|ep8|contig|masked

tp8 / ep8: indexed T=16384 (the bench's draw for that token count, the tuning table's routing
block), gate_up then down; contig: contiguous 512 rows/expert EP8, gate_up then down; masked:
the masked decode, 8 tokens/expert EP8 (4-12 rows per expert as the bench draws them), gate_up
then down.
lab/device_ncu.sh runs it under ncu."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch  # noqa: E402
import bench_w4a16 as b  # noqa: E402
import chord_kernels as ck  # noqa: E402


def indexed_calls(gen, model, e_local, tokens):
    e_all, n_up, k_up, n_down, k_down = b.MODELS[model]
    up = b.ExpertWeights(None, e_local, n_up, k_up, gen)
    down = b.ExpertWeights(None, e_local, n_down, k_down, gen)
    ids = torch.arange(e_all, device="cuda")
    local = torch.where(ids < e_local, ids, torch.full_like(ids, -1)).to(torch.int32)
    gen.manual_seed(b.SEED + tokens)
    routes, _, active, block, sorted_ids, expert_ids, ntp = b.indexed_routing(None, tokens, e_all, 8, local, up, 64,
                                                                              gen)
    print(f"{model} T={tokens}: routing block {block}, {routes.numel()} routed rows, {active} active experts")
    calls = []
    for w, a_rows, top_k in ((up, tokens, 8), (down, tokens * 8, 1)):
        a = torch.randn(a_rows, w.k, device="cuda", generator=gen).to(torch.bfloat16)
        out = torch.empty((tokens * 8, w.n), dtype=torch.bfloat16, device="cuda")
        calls.append(lambda a=a, w=w, out=out, top_k=top_k:
                     ck.indexed(a, w.packed, sorted_ids, expert_ids, ntp, top_k, out, block_size=block))
    return calls


def contiguous_calls(gen, rows_per_expert=512, experts=b.shapes.SPLITS["ep8"]["experts_local"]):
    _, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
    calls = []
    m = experts * rows_per_expert
    m_indices = torch.arange(experts, device="cuda", dtype=torch.int32).repeat_interleave(rows_per_expert)
    for n, k in ((n_up, k_up), (n_down, k_down)):
        w = b.ExpertWeights(None, experts, n, k, gen)
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        calls.append(lambda a=a, w=w, out=out: ck.contiguous(a, w.packed, m_indices, out))
    return calls


def masked_calls(gen, tokens_per_expert=8, experts=b.shapes.SPLITS["ep8"]["experts_local"]):
    _, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
    calls = []
    max_m = 2 * tokens_per_expert
    masked_m = b.masked_rows(experts, tokens_per_expert, gen)
    for n, k in ((n_up, k_up), (n_down, k_down)):
        w = b.ExpertWeights(None, experts, n, k, gen)
        a = torch.randn(experts, max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
        out = torch.empty((experts, max_m, n), dtype=torch.bfloat16, device="cuda")
        calls.append(lambda a=a, w=w, out=out: ck.masked(a, w.packed, masked_m, tokens_per_expert, out))
    return calls


def main(which):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(b.SEED)
    if which == "tp8":
        calls = indexed_calls(gen, "tp8", b.MODELS["tp8"][0], 16384)
    elif which == "ep8":
        calls = indexed_calls(gen, "kimi", b.shapes.SPLITS["ep8"]["experts_local"], 16384)
    elif which == "contig":
        calls = contiguous_calls(gen)
    elif which == "masked":
        calls = masked_calls(gen)
    else:
        sys.exit(f"unknown row set '{which}': tp8, ep8, contig or masked")
    for call in calls:  # compile and warm up outside the profiled range
        call()
        call()
    profile_once(calls)


def profile_once(calls):
    """Each (warmed-up) call once inside the NVTX range "prof" that ncu's --nvtx-include selects."""
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("prof")
    for call in calls:
        call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
