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

Library = lib.Library
_opened = {}


def load_library(path):
    """Opens another build of libchord.so by path (e.g. an earlier commit's build), to run
    chord_kernels' operators through it with ``library=``: the same Python checks and calls on
    the same tensors, the C API calls going to that build (a second copy in this process, with
    its own JIT memo and errors). ImportError if it is not a chord library of this C API
    version; an entry point it lacks is listed in ``.missing`` and raises NotImplementedError
    when called. Opened once per file; never unloaded."""
    real = os.path.realpath(path)
    if real not in _opened:
        _opened[real] = Library(real)
    return _opened[real]


def native(library):
    """The C API table a call goes through: this package's libchord for None, else the
    Library from load_library."""
    if library is None:
        return lib
    if not isinstance(library, Library):
        raise TypeError(f"chord_kernels: 'library' must come from load_library, got {type(library).__name__}")
    return library
