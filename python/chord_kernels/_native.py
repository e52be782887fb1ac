"""Loads the native module, after what it needs is in place (_native_env.py)."""
import os

from ._native_env import KERNEL_LAYER, NVRTC_SONAME, preload_nvrtc, use_kernel_layer  # noqa: F401

nvrtc_path = preload_nvrtc()
use_kernel_layer(os.environ)

try:
    from . import _chord as lib  # noqa: E402
except ImportError as e:  # pragma: no cover - depends on the machine
    hint = "" if nvrtc_path else f" ({NVRTC_SONAME} was not found: install the CUDA 13 toolkit or set CUDA_HOME)"
    raise ImportError(f"chord_kernels: cannot load the native module: {e}{hint}") from e
