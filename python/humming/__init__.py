"""`humming` import root backed by chord.

vLLM's Humming backend (vLLM 0.29 to 0.34: vllm/utils/humming.py) imports humming.forward,
humming.ops, humming.transform, humming.tune, humming.config, humming.dtypes,
humming.schema and humming.utils.weight. This package serves those names with chord's
kernels behind them: bfloat16 or float16 activations (the model dtype) x INT4 weights,
symmetric or with integer zero points, group size a multiple of 32 or channel-wise (humming,
compressed-tensors, GPTQ and AWQ checkpoints). Every other format resolves as a name and is
refused with NotImplementedError when the model loads. docs/vllm.md has the contract.
"""
from . import config, dtypes  # noqa: F401

BACKEND = "chord"
