"""Writes the activation kwargs an installed vLLM passes to humming's may_process_input,
one entry per MoEActivation, as JSON: {name: {"kwargs": {...}, "config": {...}}}.

The GPU machine cannot install vLLM; this runs where vLLM is installed and its output
travels with the GPU test (CHORD_VLLM_ACTIVATIONS=<file>), so the kernels see the exact
text vLLM sends. Parameterized activations get the config named in CONFIGS.

    python tools/vllm/export_activations.py OUT.json
"""
import dataclasses
import json
import sys

from vllm.model_executor.layers.fused_moe.activation import ApplyMoEActivationConfig, MoEActivation
from vllm.model_executor.layers.quantization.utils.humming.activation import get_humming_activation

# Parameters for the activations that need them (values of the kind models use).
CONFIGS = {
    "situ": ApplyMoEActivationConfig(activation_situ_beta=2.0, activation_situ_linear_beta=3.0),
    "swigluoai_uninterleave": ApplyMoEActivationConfig(clamp_limit=7.0, alpha=1.702, beta=1.0),
    "silu_clamped": ApplyMoEActivationConfig(clamp_limit=7.0),
}


def main(path):
    table = {}
    for activation in MoEActivation:
        config = CONFIGS.get(activation.value)
        kwargs = get_humming_activation(activation, config)
        table[activation.value] = {"kwargs": kwargs, "config": dataclasses.asdict(config) if config else None}
    kwargs = get_humming_activation(MoEActivation.SILU, CONFIGS["silu_clamped"])
    table["silu_clamped"] = {"kwargs": kwargs, "config": dataclasses.asdict(CONFIGS["silu_clamped"])}
    with open(path, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    print(f"{len(table)} activations -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
