"""CPU: malformed checkpoint configs and call arguments reach the `humming` facade as named
errors, never as a silently different layout (vLLM hands the checkpoint's raw config dict to
the schemas)."""
import pytest
import torch

from humming import dtypes, forward
from humming.config import LayerConfig
from humming.schema import BaseWeightSchema, HummingWeightSchema
from humming.schema.awq import AWQWeightSchema
from humming.schema.gptq import GPTQWeightSchema

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
CT = {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
      "strategy": "group", "group_size": 128, "symmetric": True}


def config(base, **change):
    c = dict(base)
    for key, value in change.items():
        if value is None:
            c.pop(key, None)
        else:
            c[key] = value
    return c


@pytest.mark.parametrize("cfg, message", [
    (config(GPTQ, sym="false"), "GPTQ 'sym' must be true or false, got 'false'"),
    (config(GPTQ, desc_act="False"), "GPTQ 'desc_act' must be true or false"),
    (config(AWQ, zero_point="true"), "AWQ 'zero_point' must be true or false"),
    (config(CT, symmetric="false"), "compressed-tensors 'symmetric' must be true or false"),
    (config(CT, num_bits="4"), "compressed-tensors 'num_bits' must be an integer, got '4'"),
    (config(GPTQ, bits=None), "the GPTQ config lacks 'bits'"),
    (config(GPTQ, group_size=None), "the GPTQ config lacks 'group_size'"),
    (config(AWQ, group_size=None), "the AWQ config lacks 'group_size'"),
    (config(GPTQ, group_size="128"), "GPTQ 'group_size' must be an integer, got '128'"),
    (config(GPTQ, bits=4.0), "GPTQ 'bits' must be an integer, got 4.0"),
    ({"quant_method": "humming", "dtype": "uint4", "group_size": 128, "has_zero_point": "no"},
     "humming 'has_zero_point' must be true or false"),
])
def test_malformed_config_values_are_named(cfg, message):
    """A string "false" is truthy: read by truth value, `sym: "false"` would drop the zero points."""
    with pytest.raises(ValueError, match=message):
        BaseWeightSchema.from_config(cfg)


def test_a_config_that_is_not_a_dict_is_a_type_error():
    with pytest.raises(TypeError, match="must be a dict, got NoneType"):
        GPTQWeightSchema.from_config(None)


def test_autoawq_key_names_give_the_checkpoints_group():
    schema = BaseWeightSchema.from_config({"quant_method": "awq", "w_bit": 4, "q_group_size": 64,
                                           "zero_point": True, "version": "GEMM"})
    assert isinstance(schema, AWQWeightSchema) and (schema.bits, schema.group_size) == (4, 64)
    assert schema.get_tensors_attrs(256, 512, torch.float16)["scales"]["shape"] == (8, 256)


def test_gptq_registers_the_tensors_a_gptq_checkpoint_stores():
    attrs = BaseWeightSchema.from_config(GPTQ).get_tensors_attrs(256, 512, torch.float16, num_experts=4)
    assert {name: a["shape"] for name, a in attrs.items()} == {
        "qweight": (4, 64, 256), "scales": (4, 4, 256), "qzeros": (4, 4, 32), "g_idx": (4, 512)}
    assert attrs["scales"]["extra_attrs"]["scale_type"] == "group"
    assert attrs["qweight"]["extra_attrs"] == {"input_dim": 1, "output_dim": 2, "packed_dim": 1, "packed_factor": 8}
    channel = BaseWeightSchema.from_config(config(GPTQ, group_size=-1)).get_tensors_attrs(256, 512, torch.float16)
    assert channel["scales"]["shape"] == (1, 256) and channel["scales"]["extra_attrs"]["scale_type"] == "channel"


def test_pad_multiples_must_be_positive():
    schema = BaseWeightSchema.from_config(CT)
    with pytest.raises(ValueError, match="pad_k_to_multiple must be a positive integer, got 0"):
        schema.get_padded_tensors_attrs(256, 256, torch.bfloat16, pad_k_to_multiple=0)


def test_channel_scales_quantize_one_scale_per_row():
    """The layout of a channel-scale schema holds [N, 1] scales whatever group_size says."""
    schema = HummingWeightSchema(b_dtype="uint4", weight_scale_type="channel", weight_scale_group_size=128)
    assert schema.get_tensors_attrs(64, 256, torch.bfloat16)["weight_scale"]["shape"] == (64, 1)
    assert schema.quant_tensor(torch.randn(64, 256), torch.bfloat16)["weight_scale"].shape == (64, 1)


@pytest.mark.parametrize("field, value", [("shape_n", 0), ("shape_k", -16), ("num_experts", -4), ("num_experts", 2.5),
                                          ("shape_n", "64")])
def test_layer_config_refuses_impossible_layers(field, value):
    args = dict(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16, bs_dtype=dtypes.bfloat16,
                shape_n=64, shape_k=128, num_experts=4)
    args[field] = value
    with pytest.raises(ValueError, match=f"LayerConfig {field} must be an integer"):
        LayerConfig(**args)


def test_grouped_contiguous_takes_only_the_e_plus_1_offsets(monkeypatch):
    """vLLM passes moe_permute's E + 1 first-row offsets; E entries (start rows or end rows
    alone look the same) are refused rather than guessed, and so are float offsets."""
    layer = LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                        bs_dtype=dtypes.bfloat16, shape_n=64, shape_k=128, num_experts=4)
    monkeypatch.setattr(LayerConfig, "check_device", lambda self, device: None)
    monkeypatch.setattr(forward, "_packed", lambda config, weight, scale: None)
    monkeypatch.setattr(forward, "_check_dtype", lambda packed, inputs, outputs: None)
    called = []
    monkeypatch.setattr(forward.chord_kernels, "offsets", lambda *args: called.append(args[2]))
    inputs = torch.zeros(10, 128, dtype=torch.bfloat16)
    for bad in (torch.tensor([0, 3, 5, 8]), torch.tensor([0.0, 3.5, 5.0, 8.0, 10.0])):
        with pytest.raises(ValueError, match="E \\+ 1 = 5 integer first-row offsets"):
            forward.humming_forward(layer, inputs, torch.zeros(1), expert_layout=bad)
    forward.humming_forward(layer, inputs, torch.zeros(1), expert_layout=torch.tensor([0, 3, 5, 8, 10]))
    assert called[0].tolist() == [3, 5, 8, 10] and called[0].dtype == torch.int32


@pytest.mark.parametrize("cfg", [GPTQ, AWQ, CT, {"quant_method": "humming", "dtype": "uint4", "group_size": 128,
                                                 "has_zero_point": True}])
def test_one_group_per_gpu_is_still_a_group_scale(cfg):
    """Under tensor parallelism a GPU's K can be a single group (intermediate 256 on 2 GPUs, group
    128): its scales are still sharded along K by vLLM's loaders, so they stay group scales."""
    attrs = BaseWeightSchema.from_config(cfg).get_tensors_attrs(256, 128, torch.bfloat16)
    kinds = {name: a["extra_attrs"].get("scale_type") for name, a in attrs.items() if "scale" in name or "zero" in name}
    assert kinds and set(kinds.values()) == {"group"}, kinds


def test_tuning_rows_are_checked_and_empty_rows_fall_back_as_the_caller_does():
    from humming.tune import FALLBACK_BLOCK, block_for
    assert block_for([], 16) == FALLBACK_BLOCK  # what vLLM's own lookup over no rows uses
    with pytest.raises(ValueError, match="a tuning row must be"):
        block_for([[-1, 100, {"backend": "chord"}]], 16)
    with pytest.raises(ValueError, match="tuning rows must be a list"):
        block_for({"block_shape": [16]}, 16)


def test_an_unknown_input_layout_is_refused_even_with_nothing_to_do(monkeypatch):
    layer = LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                        bs_dtype=dtypes.bfloat16, shape_n=64, shape_k=128, num_experts=4)
    monkeypatch.setattr(LayerConfig, "check_device", lambda self, device: None)
    with pytest.raises(NotImplementedError, match="input layout 'bogus'"):
        forward.may_process_input(layer, torch.zeros(4, 128, dtype=torch.bfloat16), layout="bogus")
    inputs = torch.zeros(4, 128, dtype=torch.bfloat16)
    assert forward.may_process_input(layer, inputs)[0] is inputs
