"""The Python examples in examples/ and the README's Python example. On a GPU each example
checks its result against torch and exits 0; without one it exits 77 with a one-line
message on stderr. (CI step scripts/ci.d/05-c-example.sh builds and runs the C example.)"""
import glob
import os
import re
import subprocess
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = ["grouped_mm.py", "moe_indexed.py", "nf4.py"]


def source(*parts):
    path = os.path.join(ROOT, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not next to the tests")
    return path


def test_every_example_is_listed():
    source("examples")
    scripts = [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "examples", "*.py"))]
    assert sorted(name for name in scripts if not name.startswith("_")) == EXAMPLES  # _common.py is shared code


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name):
    proc = subprocess.run([sys.executable, source("examples", name)], capture_output=True, text=True)
    if torch.cuda.is_available():
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert re.search(r"^relative error \S+ \(limit 0.01\): OK$", proc.stdout, re.M), proc.stdout
    else:
        assert (proc.returncode, proc.stdout) == (77, ""), proc.stdout + proc.stderr[-3000:]
        # The message is the last line: torch may warn before it (e.g. without NumPy installed).
        assert proc.stderr.endswith(f"{name}: needs a CUDA GPU; torch {torch.__version__} sees none\n"), proc.stderr


@pytest.mark.gpu
def test_readme_python_example():
    readme = open(source("README.md")).read()
    examples = readme[readme.index("## Examples"):]
    code = re.search(r"```python\n(.*?)```", examples, re.S).group(1)
    assert len(code.splitlines()) <= 20
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    error = float(re.fullmatch(r"relative error (\S+)\n", proc.stdout).group(1))
    assert error < 1e-2
