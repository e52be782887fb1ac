"""The `chord` console script: runs the CLI binary that the chord_kernels wheel bundles
(chord_kernels/bin/chord).

It lives outside the chord_kernels package because importing anything inside that package
runs chord_kernels/__init__.py, which imports torch: seconds of start-up, and NumPy's
warnings, for a command that needs neither. So it uses the standard library only and loads
chord_kernels/_native_env.py by its path.
"""
import importlib.util
import os
import sys


def package_dir():
    """The chord_kernels folder, located without importing the package (None if absent)."""
    spec = importlib.util.find_spec("chord_kernels")
    folders = list(spec.submodule_search_locations or []) if spec else []
    return folders[0] if folders else None


def _load_native_env(folder):
    spec = importlib.util.spec_from_file_location("chord_kernels_cli._native_env",
                                                  os.path.join(folder, "_native_env.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    folder = package_dir()
    path = os.path.join(folder, "bin", "chord") if folder else None
    if path is None or not os.path.exists(path):
        sys.stderr.write(f"chord: the CLI binary of the chord_kernels wheel is missing "
                         f"({path or 'chord_kernels is not installed'})\n")
        return 1
    env = dict(os.environ)
    native_env = _load_native_env(folder)
    native_env.use_kernel_layer(env)  # as chord_kernels does: `chord info` lists the layer
    # The binary finds libchord through its RPATH, but libnvrtc may sit in a wheel folder
    # that the dynamic loader does not search: hand that folder over.
    nvrtc = native_env.preload_nvrtc()
    if nvrtc and os.path.isabs(nvrtc):
        env["LD_LIBRARY_PATH"] = os.path.dirname(nvrtc) + (":" + env["LD_LIBRARY_PATH"]
                                                          if env.get("LD_LIBRARY_PATH") else "")
    os.execve(path, [path] + sys.argv[1:], env)
    return 0  # not reached
