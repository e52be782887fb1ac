"""Loads the native module, after libnvrtc (_nvrtc.py says from where)."""
from ._nvrtc import NVRTC_SONAME, preload_nvrtc

nvrtc_path = preload_nvrtc()

# The wheel's read-only kernel layer (sm_90a kernels of the default profiles), searched after
# the user's cache. An explicit CHORD_CACHE_READONLY_DIRS (even empty) is left as it is.
KERNEL_LAYER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_layer")
if os.path.isdir(KERNEL_LAYER) and "CHORD_CACHE_READONLY_DIRS" not in os.environ:
    os.environ["CHORD_CACHE_READONLY_DIRS"] = KERNEL_LAYER

try:
    from . import _chord as lib  # noqa: E402
except ImportError as e:  # pragma: no cover - depends on the machine
    hint = "" if nvrtc_path else f" ({NVRTC_SONAME} was not found: install the CUDA 13 toolkit or set CUDA_HOME)"
    raise ImportError(f"chord_kernels: cannot load the native module: {e}{hint}") from e
