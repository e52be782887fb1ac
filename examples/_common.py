"""What the examples share: the GPU check, a grouped GEMM in torch, the report."""
import os
import sys

import torch


def require_gpu(script):
    """Exits 77 with a one-line message when torch sees no CUDA GPU (the kernels need one)."""
    if not torch.cuda.is_available():
        sys.stderr.write(f"{os.path.basename(script)}: needs a CUDA GPU; torch {torch.__version__} sees none\n")
        sys.exit(77)


def grouped_reference(x, offs, dense):
    """out[rows of e] = x[rows of e] @ dense[e].T in FP32; offs: cumulative end rows."""
    ref = torch.zeros(x.shape[0], dense.shape[1], device=x.device)
    start = 0
    for e, end in enumerate(offs.tolist()):
        ref[start:end] = x[start:end].float() @ dense[e].float().T
        start = end
    return ref


def report(out, ref, limit=1e-2):
    """Prints the first values of both and the relative error; returns the exit status."""
    error = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
    print(f"out[0, :4]  chord {out[0, :4].float().tolist()}")
    print(f"            torch {ref[0, :4].float().tolist()}")
    print(f"relative error {error:.1e} (limit {limit}): {'OK' if error < limit else 'FAILED'}")
    return 0 if error < limit else 1
