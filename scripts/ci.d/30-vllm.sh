#!/usr/bin/env bash
# CI step: the code of each vLLM release this package serves (0.33 and 0.34, the newest),
# run against this package as its `humming`. Installs each vllm==X without its GPU stack
# (--no-deps, then the pure-Python packages that the humming modules import) into the
# virtual environment that 20-python.sh built, and runs tests/python/test_vllm_contract.py
# with CHORD_REQUIRE_VLLM=1 (a missing vLLM fails instead of skipping). vLLM's requirement
# of humming-kernels is not installed: this package provides `humming`.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${CHORD_PY_CI_DIR:-/tmp/chord-py-ci}
py="$work/venv/bin/python"
[ -x "$py" ] || { echo "vllm step: $py is missing (20-python.sh builds it)" >&2; exit 1; }
"$py" -m pip install -q regex psutil pyzmq urllib3 pydantic cbor2 aiohttp requests openai openai-harmony pillow \
  pybase64 cachetools msgspec cloudpickle uvloop py-cpuinfo prometheus_client xgrammar fastapi partial_json_parser \
  llguidance einops compressed-tensors "transformers>=5.16.1,<5.21.0"
for version in 0.33.0 0.34.0; do
  echo "== installing vllm==$version (no GPU dependencies)"
  "$py" -m pip install -q --no-deps "vllm==$version"
  "$py" -c "import humming, vllm; print('vllm', vllm.__version__, '| humming from', humming.__file__)"
  echo "== vLLM $version contract tests"
  (cd "$work" && CHORD_REQUIRE_VLLM=1 "$py" -m pytest -q -rs -p no:cacheprovider "$OLDPWD/tests/python/test_vllm_contract.py")
done
