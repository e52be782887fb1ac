"""Tests marked `gpu` are skipped, with the reason, where no CUDA GPU is usable."""
import ctypes
import os

import pytest
import torch


def gpu_missing():
    """Why torch cannot run on a GPU here, or None when it can."""
    if torch.version.cuda is None:
        return f"needs a CUDA GPU: torch {torch.__version__} is a CPU-only build"
    if torch.cuda.is_available():
        return None
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "needs a CUDA GPU: there is no CUDA driver (libcuda.so.1 cannot be loaded)"
    return ("needs a CUDA GPU: the CUDA driver loads but torch sees no device "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})")


def pytest_collection_modifyitems(config, items):
    reason = gpu_missing()
    if reason is None:
        return
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
