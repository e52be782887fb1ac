"""The `chord` console script: runs the CLI binary bundled in the wheel."""
import os
import sys

from . import _native  # noqa: F401  (preloads libnvrtc for the child through LD_LIBRARY_PATH below)


def binary_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "chord")


def main():
    path = binary_path()
    if not os.path.exists(path):
        sys.stderr.write(f"chord: the bundled CLI is missing at {path}\n")
        return 1
    env = dict(os.environ)
    # The binary resolves libchord through its RPATH; libnvrtc may live in a wheel folder
    # the dynamic loader does not search, so hand the folder that was found over.
    nvrtc = _native.nvrtc_path
    if nvrtc and os.path.isabs(nvrtc):
        folder = os.path.dirname(nvrtc)
        env["LD_LIBRARY_PATH"] = folder + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    os.execve(path, [path] + sys.argv[1:], env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
