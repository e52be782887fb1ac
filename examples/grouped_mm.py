"""chord_kernels.grouped_mm: torch._grouped_mm's offsets convention over INT4 experts.

    python examples/grouped_mm.py

The rows of x are sorted by expert and offs[e] is the end row of expert e's rows
(cumulative), so out[rows of e] = x[rows of e] @ W[e].T. The weights come as a
compressed-tensors checkpoint stores them (pack-quantized: int32 [E, N, K/8], eight 4-bit
codes per word, and bf16 scales [E, N, K/32]), which pack_w4a16 takes as they are.

Prints the error against torch and exits 0 when it is within 1e-2 (relative); 1 when not;
77, with a message, when there is no CUDA GPU.
"""
import sys

import torch

from _common import grouped_reference, report, require_gpu

require_gpu(__file__)

import chord_kernels as ck  # noqa: E402

EXPERTS, N, K = 8, 768, 2048


def unpack_codes(words):
    """int32 [E, N, K/8] -> codes [E, N, K]: code j of a word sits in bits 4j..4j+3."""
    shifts = torch.arange(0, 32, 4, device=words.device, dtype=torch.int32)
    return ((words.unsqueeze(-1) >> shifts) & 0xF).flatten(-2)


def main():
    torch.manual_seed(0)
    words = torch.randint(-2**31, 2**31, (EXPERTS, N, K // 8), dtype=torch.int64, device="cuda").to(torch.int32)
    scales = (torch.rand(EXPERTS, N, K // 32, device="cuda") * 0.02 + 0.001).to(torch.bfloat16)
    w = ck.pack_w4a16(words, scales)  # the form is told apart by the last dimension (K/8)

    counts = torch.randint(0, 64, (EXPERTS,))
    counts[3] = 0  # an expert with no rows
    offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
    x = torch.randn(int(counts.sum()), K, device="cuda").to(torch.bfloat16)

    out = ck.grouped_mm(x, offs, w)  # bf16 [rows, N]

    # The reference: the logical weight bf16((code - 8) * scale), one matmul per expert.
    dense = ((unpack_codes(words).float() - 8) * scales.float().repeat_interleave(32, -1)).to(torch.bfloat16)
    ref = grouped_reference(x, offs, dense)
    print(f"grouped_mm: {x.shape[0]} rows over {EXPERTS} experts of [{N}, {K}], rows per expert {counts.tolist()}")
    return report(out, ref)


if __name__ == "__main__":
    sys.exit(main())
