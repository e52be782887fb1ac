"""The Hugging Face `kernels` build layout (scripts/hf_kernels_layout.py): the loader picks
our variant for this machine, get_local_kernel imports it, and NF4Weights / nf4_grouped_mm
(and the INT4 operators) are there. CPU only: loading needs no GPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import chord_kernels as ck

kernels = pytest.importorskip("kernels", reason="the Hugging Face `kernels` package is not installed "
                                                "(pip install kernels)")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "hf_kernels_layout.py"
NAMES = ("NF4Weights", "nf4_grouped_mm", "NF4QuantState", "quantize_nf4", "from_bitsandbytes", "grouped_mm",
         "pack_w4a16")


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is not next to the tests")
    out = tmp_path_factory.mktemp("hub")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--package", str(Path(ck.__file__).parent), "--out",
                           str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    variant = Path(proc.stdout.strip().splitlines()[-1])
    assert variant.parent == out / "build"
    return out, variant


def test_layout_files(layout):
    out, variant = layout
    import torch

    meta = json.loads((variant / "metadata.json").read_text())
    assert meta["name"] == "chord-kernels" and meta["backend"]["type"] == "cuda"
    assert meta["id"].startswith("_chord_kernels_cuda_") and meta["python-depends"] == []
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    assert variant.name.startswith(f"torch{major}{minor}-")
    assert variant.name.endswith("-x86_64-linux") or variant.name.endswith("-aarch64-linux")
    assert (variant / "__init__.py").exists() and (variant / "chord_kernels" / "libchord.so").exists()
    assert list((variant / "chord_kernels").glob("_chord*.so"))
    assert not list(variant.rglob("__pycache__"))
    from kernels._rust import Metadata

    parsed = Metadata.read_from_file(variant / "metadata.json")  # the loader's own parser
    assert str(parsed.name) == "chord-kernels" and parsed.id == meta["id"]


def load_in_fresh_process(path, expect_bundled):
    """get_local_kernel in a new interpreter (chord_kernels not imported yet, so the build's
    own copy is loaded) and the names it must expose."""
    code = f"""
import sys
from pathlib import Path
import kernels
k = kernels.get_local_kernel(Path({str(path)!r}))
missing = [n for n in {NAMES!r} if not callable(getattr(k, n, None))]
assert not missing, missing
import chord_kernels
print(chord_kernels.__file__)
print(k.nf4_grouped_mm is chord_kernels.nf4_grouped_mm)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    file, same = proc.stdout.split()[-2:]
    assert same == "True"
    assert Path(file).is_relative_to(expect_bundled), file


def test_get_local_kernel_loads_the_repository(layout):
    out, variant = layout
    try:  # kernels >= 0.19 keeps its variant resolution under _internals
        from kernels._internals.backends import _backend
        from kernels._internals.variants import get_variants_local, resolve_variant
    except ImportError:
        from kernels.backends import _backend
        from kernels.variants import get_variants_local, resolve_variant

    backend = _backend()
    if type(backend).__name__ != "CUDA":
        pytest.skip(f"kernels detects backend {backend} here (no CUDA runtime library): it would not pick a "
                    "CUDA variant; the variant-path test covers loading")
    chosen, trace = resolve_variant(get_variants_local(out / "build"))
    assert chosen is not None and chosen.variant_str == variant.name, trace
    load_in_fresh_process(out, variant)


def test_get_local_kernel_loads_the_variant_folder(layout):
    _, variant = layout
    load_in_fresh_process(variant, variant)


def test_loading_reuses_an_imported_chord_kernels(layout):
    _, variant = layout
    k = kernels.get_local_kernel(variant)
    assert k.NF4Weights is ck.NF4Weights and k.nf4_grouped_mm is ck.nf4_grouped_mm
