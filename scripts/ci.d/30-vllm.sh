#!/usr/bin/env bash
# CI step: vLLM 0.33's own code against this package as its `humming`. Installs
# vllm==0.33.0 without its GPU stack (--no-deps, then the pure-Python packages that the
# humming modules import) into the virtual environment that
# 20-python.sh built, and runs tests/python/test_vllm_contract.py with CHORD_REQUIRE_VLLM=1
# (a missing vLLM fails instead of skipping). vLLM's requirement of humming-kernels is not
# installed: this package provides `humming`.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${CHORD_PY_CI_DIR:-/tmp/chord-py-ci}
py="$work/venv/bin/python"
[ -x "$py" ] || { echo "vllm step: $py is missing (20-python.sh builds it)" >&2; exit 1; }
echo "== installing vllm==0.33.0 (no GPU dependencies)"
"$py" -m pip install -q --no-deps "vllm==0.33.0"
"$py" -m pip install -q regex psutil pyzmq urllib3 pydantic cbor2 aiohttp requests openai openai-harmony pillow \
  pybase64 cachetools msgspec cloudpickle uvloop py-cpuinfo prometheus_client xgrammar fastapi partial_json_parser \
  llguidance einops compressed-tensors "transformers>=5.16.1,<5.21.0"
"$py" -c "import humming, vllm; print('vllm', vllm.__version__, '| humming from', humming.__file__)"
echo "== vLLM contract tests"
cd "$work"
CHORD_REQUIRE_VLLM=1 "$py" -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python/test_vllm_contract.py"
