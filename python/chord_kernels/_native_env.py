"""What the native code needs before it loads: libnvrtc.so.13, which libchord links and the
wheel does not ship, and the wheel's read-only kernel layer on CHORD_CACHE_READONLY_DIRS.

Standard library only, with no imports from the package: the `chord` console script
(chord_kernels_cli) loads this file by its path, so that it need not run
chord_kernels/__init__.py, which imports torch.
"""
import ctypes
import glob
import importlib.util
import os

NVRTC_SONAME = "libnvrtc.so.13"


def _nvrtc_candidates():
    dirs = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            dirs += [os.path.join(home, "lib64"), os.path.join(home, "lib")]
    # The nvidia-* wheels (torch's CUDA runtime): a namespace package, located without importing it.
    spec = importlib.util.find_spec("nvidia")
    for root in list(spec.submodule_search_locations or []) if spec else []:
        dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
    return [os.path.join(d, NVRTC_SONAME) for d in dirs]


def preload_nvrtc():
    """Loads libnvrtc into this process (RTLD_GLOBAL, so that libchord finds it) from the
    loader's search path, CUDA_HOME, CUDA_PATH, /usr/local/cuda or the nvidia-cuda-nvrtc wheel
    that torch depends on, whichever answers first. Returns the soname or the path it loaded,
    None when there is none."""
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


# The wheel's read-only kernel layer: the sm_90a kernels of the default profiles.
KERNEL_LAYER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_layer")


def use_kernel_layer(environ):
    """Puts KERNEL_LAYER on CHORD_CACHE_READONLY_DIRS in `environ` (searched after the user's
    cache) where the wheel has one. An explicit CHORD_CACHE_READONLY_DIRS (even empty) is left
    as it is."""
    if os.path.isdir(KERNEL_LAYER) and "CHORD_CACHE_READONLY_DIRS" not in environ:
        environ["CHORD_CACHE_READONLY_DIRS"] = KERNEL_LAYER
