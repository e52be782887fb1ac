#!/usr/bin/env bash
# CI step: build the Python wheel without a GPU, install it into a fresh virtual
# environment with torch from PyPI, and run the CPU pytest subset (GPU tests skip, saying why;
# the examples in examples/ run their no-GPU path).
# Fails when the build, the install or any test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${CHORD_PY_CI_DIR:-/tmp/chord-py-ci}
mkdir -p "$work"
rm -rf "$work/venv" "$work/dist"  # a fresh environment; the folder itself (and its mode) stays

python=${PYTHON:-python3}
if ! "$python" -m venv "$work/venv" >/dev/null 2>&1; then
  # Debian splits venv out of the interpreter package.
  ver=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  scripts/apt-install.sh "python${ver}-venv" python3-venv
  "$python" -m venv "$work/venv"
fi
py="$work/venv/bin/python"
"$py" -m pip install -q --upgrade pip
# kernels: the Hugging Face loader the build-layout test drives (pure Python, ~10 s).
# torch 2.14: the version vLLM 0.33 and 0.34 pin (30-vllm.sh runs vLLM in this environment).
# bitsandbytes: the NF4 format's owner, whose CPU backend test_bnb_contract.py reads against
# (safetensors: its checkpoint round trip).
"$py" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" pytest "torch==2.14.0" kernels "bitsandbytes==0.50.2" safetensors

export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
if [ -d .deps/usr ]; then export CMAKE_PREFIX_PATH="$PWD/.deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"; fi
echo "== building the wheel"
"$py" -m pip wheel --no-build-isolation --no-deps -w "$work/dist" . > "$work/wheel.log" 2>&1 || { tail -40 "$work/wheel.log"; exit 1; }
"$py" -m pip install -q --no-deps "$work"/dist/chord_kernels-*.whl
echo "== CPU pytest"
# Run from outside the tree so the installed wheel (not python/ sources) is imported.
cd "$work"
CHORD_REQUIRE_BNB=1 "$py" -m pytest -q -rs -p no:cacheprovider "$OLDPWD/tests/python"  # -rs: each skip with its reason
