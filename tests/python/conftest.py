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


@pytest.fixture
def cpu_pack(monkeypatch):
    """The facade's load path without a GPU: humming.transform packs through
    chord_kernels.pack_w4a16's own Python path (argument checks, scales expanded to the 32-wide
    layout in the requested dtype, the tag) on CPU tensors, with the device launch replaced by a
    recorder. Returns the recorded launches: {"src_format", "scales", "zero_points"}."""
    import chord_kernels
    from chord_kernels import _ops
    from humming import transform

    launches = []

    def launch(src, src_format, scales, weight_out, scales_out, native=None):
        launches.append({"src_format": src_format, "scales": scales.clone(), "zero_points": None})

    def launch_zp(src, src_format, scales, zero_points, weight_out, scales_out, native=None):
        launches.append({"src_format": src_format, "scales": scales.clone(), "zero_points": zero_points.clone()})

    def pack(weight, scale, group, zero_point, dtype, device):
        return chord_kernels.pack_w4a16(weight, scale, group_size=group, dtype=dtype, zero_point=zero_point), 0

    monkeypatch.setattr(_ops, "_launch_pack", launch)
    monkeypatch.setattr(_ops, "_launch_pack_zp", launch_zp)
    monkeypatch.setattr(transform, "_pack", pack)
    return launches
