#!/usr/bin/env python3
"""Assembles a Hugging Face `kernels` build of chord from the built chord_kernels package:

    <out>/build/<variant>/__init__.py        the module `kernels` imports (loads the package)
    <out>/build/<variant>/metadata.json      name, id, version, python-depends, backend
    <out>/build/<variant>/chord_kernels/     the package: Python sources, libchord.so, _chord*.so,
                                             bin/chord and the bundled fmt / xxhash libraries

so that `kernels.get_local_kernel(Path(out))` (or LOCAL_KERNELS=<repo>=<out> with get_kernel)
loads chord and exposes NF4Weights, nf4_grouped_mm and the INT4 operators.

The variant is the one `kernels` picks for this machine's torch: torch<major><minor>-cxx11-
cu<major><minor>-<cpu>-linux (e.g. torch211-cxx11-cu130-x86_64-linux), from torch.__version__,
torch.compiled_with_cxx11_abi() and torch.version.cuda; --variant overrides it. The loader
accepts a cuXY build on a system CUDA X.Z with Z >= Y. chord compiles its kernels at run time
(NVRTC, per GPU), so one build serves every supported GPU of that CUDA major version.

    python scripts/hf_kernels_layout.py --out /tmp/chord-hub            # the installed package
    python scripts/hf_kernels_layout.py --package build-py/.../chord_kernels --out dist/hub
"""
import argparse
import hashlib
import importlib.util
import json
import platform
import shutil
import sys
from pathlib import Path

KERNEL_NAME = "chord-kernels"  # kernels' KernelName: [a-z][-a-z0-9]*[a-z0-9]
KERNEL_VERSION = 1
# Compute capabilities chord runs on, in the loader's notation ("8.0" covers 8.x, "a" one
# exact capability): sm_80 / 86 / 89, sm_90a, sm_100a, sm_103a, sm_120a.
CUDA_ARCHS = ["8.0", "9.0a", "10.0a", "10.3a", "12.0a"]
# What the package needs beside its Python files; a build without them cannot load.
REQUIRED = ["__init__.py", "nf4.py", "_ops.py", "_native.py", "libchord.so"]

INIT_TEMPLATE = '''"""chord: MoE GEMM kernels with 4-bit weights (NF4 in the bitsandbytes format, INT4
group-32), loaded through the Hugging Face `kernels` package.

    w = kernel.NF4Weights(experts)                 # [E, N, K] bf16 / fp16 / fp32
    y = kernel.nf4_grouped_mm(x, offsets, w)       # y[rows of e] = x[rows of e] @ W[e].T

The package next to this file is imported as `chord_kernels` (its torch ops live in the
process-wide `chord` namespace, so one process holds one copy: a chord_kernels imported
before this build is reused).
"""
import importlib.util as _util
import os as _os
import sys as _sys

_PACKAGE = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "chord_kernels")


def _load():
    module = _sys.modules.get("chord_kernels")
    if module is None:
        spec = _util.spec_from_file_location("chord_kernels", _os.path.join(_PACKAGE, "__init__.py"),
                                             submodule_search_locations=[_PACKAGE])
        module = _util.module_from_spec(spec)
        _sys.modules["chord_kernels"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            for name in [n for n in _sys.modules if n == "chord_kernels" or n.startswith("chord_kernels.")]:
                del _sys.modules[name]
            raise
    missing = [name for name in __all__ if not hasattr(module, name)]
    if missing:
        raise ImportError(f"chord_kernels imported from {{getattr(module, '__file__', '?')}} lacks {{missing}} "
                          f"(an older chord_kernels was imported first; this build is {{VERSION!r}})")
    return module


__all__ = {names!r}
VERSION = {version!r}
_module = _load()
globals().update({{name: getattr(_module, name) for name in __all__}})
__version__ = _module.__version__
'''

EXPORTS = ["NF4Weights", "NF4QuantState", "nf4_grouped_mm", "quantize_nf4", "dequantize_quant_state",
           "expected_nf4_tag", "from_bitsandbytes", "read_bitsandbytes", "W4A16Weight", "pack_w4a16",
           "pack_w4a16_grouped", "dequantize", "grouped_mm", "offsets", "indexed", "contiguous", "masked",
           "moe_align_block_size"]


def default_variant():
    import torch

    if torch.version.cuda is None:
        sys.exit("hf_kernels_layout: this torch has no CUDA; pass --variant")
    major, minor = (int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    cuda_major, cuda_minor = (int(p) for p in torch.version.cuda.split(".")[:2])
    abi = "cxx11" if torch.compiled_with_cxx11_abi() else "cxx98"
    cpu = platform.machine()
    return f"torch{major}{minor}-{abi}-cu{cuda_major}{cuda_minor}-{cpu}-{platform.system().lower()}"


def installed_package():
    spec = importlib.util.find_spec("chord_kernels")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        sys.exit("hf_kernels_layout: chord_kernels is not installed; pass --package")
    return Path(list(spec.submodule_search_locations)[0])


def package_version(package):
    # The version string lives in the native library (read only by importing it); an
    # installed wheel's dist-info next to the package names it too.
    dist = sorted(package.parent.glob("chord_kernels-*.dist-info"))
    return dist[-1].name[len("chord_kernels-"):-len(".dist-info")] if dist else "unknown"


def copy_package(src, dst):
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(src, dst, ignore=ignore, symlinks=False)


def digest(root):
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def assemble(package, out, variant, license_id="NOASSERTION"):
    package = Path(package).resolve()
    missing = [name for name in REQUIRED if not (package / name).exists()]
    if not any(package.glob("_chord*.so")):
        missing.append("_chord*.so")
    if missing:
        sys.exit(f"hf_kernels_layout: {package} is not a built chord_kernels package (missing {missing})")
    target = Path(out) / "build" / variant
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    copy_package(package, target / "chord_kernels")
    version = package_version(package)
    (target / "__init__.py").write_text(INIT_TEMPLATE.format(names=EXPORTS, version=version))
    metadata = {
        "name": KERNEL_NAME,
        # The module name kernels registers in sys.modules: unique per build content.
        "id": f"_chord_kernels_cuda_{digest(target)[:10]}",
        "version": KERNEL_VERSION,
        # The loader requires the field; the repository declares no license yet, which SPDX
        # spells NOASSERTION (--license sets the real one).
        "license": license_id,
        "python-depends": [],
        "backend": {"type": "cuda", "archs": CUDA_ARCHS},
    }
    (target / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", help="built chord_kernels folder (default: the installed package)")
    parser.add_argument("--out", required=True, help="kernel repository folder; build/<variant>/ is written there")
    parser.add_argument("--variant", help="build variant name (default: this machine's torch / CUDA / CPU)")
    parser.add_argument("--license", default="NOASSERTION", help="SPDX license id for metadata.json")
    args = parser.parse_args(argv)
    package = Path(args.package) if args.package else installed_package()
    target = assemble(package, args.out, args.variant or default_variant(), args.license)
    print(target)


if __name__ == "__main__":
    main()
