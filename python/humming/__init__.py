"""`humming` import root backed by chord.

vLLM's Humming MoE backend (`--quantization humming`, legacy HummingMethod contract)
imports humming.dtypes, humming.config, humming.layer, humming.schema and
humming.utils.weight. This package provides those names with chord's W4A16 kernels
behind them. Supported: BF16 activations x INT4 group-32 symmetric weights (humming
uint4 group 32, or compressed-tensors pack-quantized int4 group 32 symmetric); every other
scheme raises NotImplementedError naming what is unsupported. docs/vllm.md has the
contract and the settings.
"""
from . import config, dtypes  # noqa: F401

BACKEND = "chord"
