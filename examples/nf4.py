"""NF4 experts (bitsandbytes' 4-bit NormalFloat) on chord: quantize, pack, grouped GEMM.

    python examples/nf4.py

chord_kernels.NF4Weights(experts) quantizes BF16 / FP16 / FP32 experts [E, N, K] as
bitsandbytes' quantize_4bit does (blocks of 64 along K, double-quantized absmax) and packs
them on the GPU; an existing bitsandbytes QuantState packs with
NF4Weights.from_quant_state. chord_kernels.nf4_grouped_mm(x, offs, w) is the grouped GEMM
in torch._grouped_mm's offsets convention, with BF16 or FP16 activations.

Prints the error against torch and exits 0 when it is within 1e-2 (relative); 1 when not;
77, with a message, when there is no CUDA GPU.
"""
import sys

import torch

from _common import grouped_reference, report, require_gpu

require_gpu(__file__)

import chord_kernels as ck  # noqa: E402

EXPERTS, N, K = 4, 1536, 2048


def main():
    torch.manual_seed(0)
    experts = (torch.randn(EXPERTS, N, K, device="cuda") * 0.02).to(torch.bfloat16)
    w = ck.NF4Weights(experts, keep_state=True)
    # The logical weight, from the QuantState in torch: what bitsandbytes' dequantize_4bit gives.
    dense = ck.dequantize_quant_state(w.quant_state)
    assert torch.equal(w.dequantize().view(torch.int16), dense.view(torch.int16))  # bit for bit
    quantization = ((dense.float() - experts.float()).norm() / experts.float().norm()).item()

    counts = torch.tensor([40, 0, 7, 300])  # uneven, and an expert with no rows
    offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
    x = torch.randn(int(counts.sum()), K, device="cuda").to(torch.bfloat16)

    out = ck.nf4_grouped_mm(x, offs, w)  # [rows, N] in x's dtype

    ref = grouped_reference(x, offs, dense)
    print(f"NF4: {EXPERTS} experts of [{N}, {K}] ({w}); NF4 quantization error {quantization:.1e}")
    print(f"nf4_grouped_mm: {x.shape[0]} rows, rows per expert {counts.tolist()}")
    return report(out, ref)


if __name__ == "__main__":
    sys.exit(main())
