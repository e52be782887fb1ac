"""Loads the native module. libchord links libnvrtc.so.13; the wheel does not ship it, so
it is preloaded here from the system, CUDA_HOME, /usr/local/cuda or the nvidia-cuda-nvrtc
wheel that torch depends on (whichever answers first)."""
import ctypes
import glob
import os

NVRTC_SONAME = "libnvrtc.so.13"


def _nvrtc_candidates():
    dirs = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            dirs += [os.path.join(home, "lib64"), os.path.join(home, "lib")]
    try:
        import nvidia  # namespace package of the nvidia-* wheels (torch's CUDA runtime)

        for root in list(getattr(nvidia, "__path__", [])):
            dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
    except ImportError:
        pass
    return [os.path.join(d, NVRTC_SONAME) for d in dirs]


def _preload_nvrtc():
    try:
        ctypes.CDLL(NVRTC_SONAME, mode=ctypes.RTLD_GLOBAL)
        return NVRTC_SONAME
    except OSError:
        pass
    for path in _nvrtc_candidates():
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return path
            except OSError:
                continue
    return None


nvrtc_path = _preload_nvrtc()

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
