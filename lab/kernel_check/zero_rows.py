"""What experts with 0 rows cost in the masked decode: masked EP8 gate_up (48 experts, N 4096,
K 7168, max_m 16, expected_m 8) with 8 rows in every group, in every other group, in one group,
and in none; median us over 100 calls after an L2 flush each, timed with events (the bench's
timer), next to the time that reading the active experts' bytes at the bench's streaming rate
would take.

    python3 lab/kernel_check/zero_rows.py
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch  # noqa: E402
import bench_w4a16 as b  # noqa: E402
import chord_kernels as ck  # noqa: E402
import shapes  # noqa: E402


def main():
    gen = torch.Generator(device="cuda")
    gen.manual_seed(b.SEED)
    experts, n, k = shapes.gemm("ep8")[:3]  # the masked EP8 gate_up GEMM
    max_m = 16
    w = b.ExpertWeights(None, experts, n, k, gen)
    a = torch.randn(experts, max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
    out = torch.empty((experts, max_m, n), dtype=torch.bfloat16, device="cuda")
    flush = b.l2_flush_buffer()
    b.settle_clocks()
    print("groups with 8 rows | us | active experts' bytes at the streaming rate, us")
    for name, active in (("all 48", range(experts)), ("every other (24)", range(0, experts, 2)),
                         ("one", [7]), ("none", [])):
        masked_m = torch.zeros(experts, dtype=torch.int32, device="cuda")
        masked_m[list(active)] = 8
        us = b.time_us(lambda: ck.masked(a, w.packed, masked_m, 8, out), flush)
        floor = w.bytes_for(len(list(active))) / b.STREAM_BYTES_PER_S * 1e6
        print(f"{name:18s} | {us:7.1f} | {floor:7.1f}", flush=True)


if __name__ == "__main__":
    main()
