"""CPU: the installed vLLM (0.33 or 0.34) against this package as its `humming`. Every name of
vllm.utils.humming's lazy facade resolves; vLLM's own modules that read humming at import
time load; every call that vLLM's source makes into the facade binds to our signature
(calls parsed with ast, checked with inspect.signature); vLLM's compressed-tensors schema
conversion and quant-key mapping run against ours; tuning rows are ones vLLM's row
lookup finds; unsupported formats are refused by name.

Skips when vLLM is not installed, unless CHORD_REQUIRE_VLLM=1 (CI's vLLM step sets it)."""
import ast
import importlib
import inspect
import json
import os
from types import SimpleNamespace

import pytest
import torch

if os.environ.get("CHORD_REQUIRE_VLLM") == "1":
    import vllm  # noqa: F401 - must be importable
else:
    pytest.importorskip("vllm", reason="vLLM is not installed (CI's vLLM step installs each "
                        "supported version in turn)")

import vllm.utils.humming as facade  # noqa: E402

# vLLM source files that call into the facade.
CALLERS = [
    "vllm.model_executor.layers.fused_moe.experts.fused_humming_moe",
    "vllm.model_executor.layers.quantization.utils.humming.moe",
    "vllm.model_executor.layers.quantization.utils.humming.linear",
    "vllm.model_executor.layers.quantization.humming",
]
FUNCTIONS = ["humming_forward", "may_process_input", "may_quant_input", "get_heuristics_config",
             "prepare_and_transform_humming_tensors", "process_input", "quantize_weight"]


# The vLLM releases whose humming calls this package serves (docs/vllm.md).
SUPPORTED_VLLM = ("0.33.", "0.34.")


def test_vllm_version():
    import vllm
    assert vllm.__version__.startswith(SUPPORTED_VLLM), vllm.__version__


def _kernel_params(layer):
    """The parameters vLLM's kernels read after a conversion. vLLM 0.34 keeps a checkpoint
    parameter registered (retired, or under a second name) so that weights can be loaded
    again, and lists the live ones with kernel_parameters; 0.33 deletes them."""
    try:
        from vllm.model_executor.utils import kernel_parameters
    except ImportError:
        return dict(layer.named_parameters())
    return kernel_parameters(layer)


def test_every_facade_name_resolves_to_this_package():
    assert facade._EXPORTS, "vLLM's facade lists no names"
    for name, spec in facade._EXPORTS.items():
        obj = getattr(facade, name)
        module = spec.split(":")[0]
        assert module.startswith("humming"), spec
        assert obj is not None, name
    import humming
    assert humming.BACKEND == "chord"


def test_vllm_modules_that_read_humming_import():
    for module in CALLERS + ["vllm.model_executor.layers.fused_moe.oracle.int_wna16",
                             "vllm.model_executor.layers.quantization.utils.humming.schema"]:
        importlib.import_module(module)


def _calls_in(module_name):
    """(function name, number of positional args, keyword names, has **kwargs) of each call
    to one of FUNCTIONS in a module's source."""
    path = importlib.import_module(module_name).__file__
    tree = ast.parse(open(path).read())
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in FUNCTIONS:
            continue
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            continue  # the experts' own wrapper methods of the same name
        keywords = [k.arg for k in node.keywords if k.arg is not None]
        starred = any(k.arg is None for k in node.keywords)
        calls.append((name, len(node.args), keywords, starred, node.lineno))
    return path, calls


def _activation_keys():
    from vllm.model_executor.layers.fused_moe.activation import ApplyMoEActivationConfig, MoEActivation
    from vllm.model_executor.layers.quantization.utils.humming.activation import get_humming_activation
    keys = set()
    for activation in MoEActivation:
        config = None
        if activation.value == "situ":
            config = ApplyMoEActivationConfig(activation_situ_beta=2.0)
        if activation.value == "swigluoai_uninterleave":
            config = ApplyMoEActivationConfig(clamp_limit=7.0)
        keys |= set(get_humming_activation(activation, config))
    return keys


# Keys that vLLM's **kwargs carry into the calls (the dicts it builds in fused_humming_moe.py).
MOE_KWARGS = {"sorted_ids", "expert_ids", "num_tokens_padded", "compute_config", "valid_shape_m", "top_k",
              "tuning_config"}


def test_every_vllm_call_binds_to_our_signature():
    checked = 0
    activation_keys = _activation_keys()
    for module in CALLERS:
        path, calls = _calls_in(module)
        for name, positional, keywords, starred, line in calls:
            ours = getattr(facade, name)
            extra = {}
            if starred:
                extra = {k: None for k in (activation_keys if name == "may_process_input" else MOE_KWARGS)}
            sig = inspect.signature(ours)
            try:
                sig.bind(*([None] * positional), **{k: None for k in keywords}, **extra)
            except TypeError as e:
                pytest.fail(f"{path}:{line}: vLLM calls {name}({positional} positional, {keywords}, "
                            f"**{sorted(extra)}): {e}")
            checked += 1
    assert checked >= 6, f"only {checked} calls found: has vLLM's source moved?"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_compressed_tensors_layer_converts_as_vllm_does(dtype):
    """The auto WNA16 path: the oracle's schema dict of a compressed-tensors QuantizationArgs,
    vLLM's quant key of the converted schema, and the experts' support check, in a model of
    either dtype (params_dtype: the scales and activations)."""
    from compressed_tensors.quantization import QuantizationArgs
    from vllm.model_executor.layers.fused_moe.experts.fused_humming_moe import HummingExpertsBase
    from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import _humming_wna16_weight_schema
    from vllm.model_executor.layers.quantization.utils.humming.schema import (
        input_schema_to_quant_key,
        weight_schema_to_quant_key,
    )

    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=32)
    config = _humming_wna16_weight_schema(args)
    schema = facade.BaseWeightSchema.from_config(config)
    assert isinstance(schema, facade.CompressedTensorsWeightSchema)
    e, n, k = 4, 256, 512
    tensors = {"weight_packed": torch.zeros(e, n, k // 8, dtype=torch.int32),
               "weight_scale": torch.ones(e, n, k // 32, dtype=dtype),
               "weight_shape": torch.tensor([n, k]).expand(e, 2)}
    humming_schema, out = schema.convert_humming(tensors=tensors, shape_n_stacks=[n // 2, n // 2],
                                                 shape_k_stacks=[k], param_dtype=dtype, num_experts=e)
    assert isinstance(humming_schema, facade.HummingWeightSchema)
    assert set(out) == {"weight", "weight_scale"} and out["weight_scale"].dtype == dtype
    weight_key = weight_schema_to_quant_key(humming_schema, dtype)
    assert weight_key.symmetric and weight_key.scale.group_shape.col == 32
    assert input_schema_to_quant_key(facade.HummingInputSchema(), dtype) is None
    assert HummingExpertsBase._supports_quant_scheme(weight_key, None)


@pytest.mark.parametrize("strategy,group_size", [("group", 64), ("group", 128), ("channel", None)])
def test_compressed_tensors_coarser_groups_as_vllm_builds_them(strategy, group_size):
    """Group 64 / 128 and channel-wise compressed-tensors schemes, as vLLM's WNA16 oracle
    hands them over: the tensors vLLM allocates (get_tensors_attrs) are what the conversion
    takes, the converted schema keeps the group, and vLLM's experts accept its quant key."""
    from compressed_tensors.quantization import QuantizationArgs
    from vllm.model_executor.layers.fused_moe.experts.fused_humming_moe import HummingExpertsBase
    from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import _humming_wna16_weight_schema
    from vllm.model_executor.layers.quantization.utils.humming.schema import weight_schema_to_quant_key

    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy=strategy, group_size=group_size)
    schema = facade.BaseWeightSchema.from_config(_humming_wna16_weight_schema(args))
    e, n, k = 2, 256, 512
    groups = k // group_size if group_size else 1
    attrs = schema.get_tensors_attrs(n, k, torch.bfloat16, num_experts=e)
    assert attrs["weight_scale"]["shape"] == (e, n, groups)
    tensors = {"weight_packed": torch.zeros(e, n, k // 8, dtype=torch.int32),
               "weight_scale": torch.ones(e, n, groups, dtype=torch.bfloat16),
               "weight_shape": torch.tensor([n, k]).expand(e, 2)}
    humming_schema, out = schema.convert_humming(tensors=tensors, shape_n_stacks=[n], shape_k_stacks=[k],
                                                 param_dtype=torch.bfloat16, num_experts=e)
    assert humming_schema.group_size == (group_size or 0)
    assert humming_schema.get_tensors_attrs(n, k, torch.bfloat16, num_experts=e)["weight_scale"]["shape"] == \
        (e, n, groups)
    assert HummingExpertsBase._supports_quant_scheme(weight_schema_to_quant_key(humming_schema, torch.bfloat16), None)
    with pytest.raises(ValueError, match="expected"):
        bad = dict(tensors, weight_scale=torch.ones(e, n, k // 32, dtype=torch.bfloat16))
        schema.convert_humming(tensors=bad, shape_n_stacks=[n], shape_k_stacks=[k], param_dtype=torch.bfloat16,
                               num_experts=e)


@pytest.mark.parametrize("group_size", [128, -1])
def test_gptq_coarser_groups(group_size):
    """GPTQ group 128 and channel-wise (-1), symmetric: qweight [E, K/8, N] and scales
    [E, K/G, N] become chord's N-first form with the group kept."""
    schema = facade.BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": group_size,
                                                  "desc_act": False, "sym": True})
    e, n, k = 2, 128, 256
    groups = k // group_size if group_size > 0 else 1
    scales = torch.rand(e, groups, n, dtype=torch.float16)
    qweight = torch.randint(-2**31, 2**31 - 1, (e, k // 8, n), dtype=torch.int32)
    humming_schema, out = schema.convert_humming(tensors={"qweight": qweight, "scales": scales},
                                                 shape_n_stacks=[n], shape_k_stacks=[k],
                                                 param_dtype=torch.bfloat16, num_experts=e)
    assert humming_schema.group_size == max(group_size, 0)
    assert torch.equal(out["weight"], qweight.transpose(1, 2))
    assert torch.equal(out["weight_scale"], scales.transpose(1, 2).to(torch.bfloat16))
    with pytest.raises(ValueError, match="GPTQ scales"):
        schema.convert_humming(tensors={"qweight": qweight, "scales": scales[:, :1] if groups > 1 else
                                        torch.rand(e, 2, n, dtype=torch.float16)},
                               shape_n_stacks=[n], shape_k_stacks=[k], param_dtype=torch.bfloat16, num_experts=e)


class _Hopper:
    """vLLM's current_platform as check_and_fallback_input_schema reads it: an H200 (sm_90)."""

    @staticmethod
    def get_device_capability(device_id=0):
        from vllm.platforms.interface import DeviceCapability
        return DeviceCapability(9, 0)


def _vllm_moe_checkpoint(method, e, n, k, group, dtype, gen):
    """One w13 sublayer as vLLM's GPTQ / AWQ / compressed-tensors MoE methods register it in
    a model whose params_dtype is `dtype` (the scales in it), the quant config those methods
    hand the WNA16 oracle, and the codes, N-first scales and zero points it stands for."""
    from compressed_tensors.quantization import QuantizationArgs
    from vllm.model_executor.layers.quantization.auto_awq import AutoAWQConfig
    from vllm.model_executor.layers.quantization.auto_gptq import AutoGPTQConfig
    from vllm.model_executor.layers.quantization.utils.quant_utils import awq_pack
    from humming.utils.weight import pack_int4
    codes = torch.randint(0, 16, (e, n, k), generator=gen, dtype=torch.int32)
    zeros = torch.randint(0, 16, (e, n, k // group), generator=gen, dtype=torch.int32)
    scales = (torch.rand(e, n, k // group, generator=gen) * 0.01 + 1e-3).half().to(dtype)  # [E, N, K/G]
    if method == "gptq":
        quant_config = AutoGPTQConfig(4, group, False, True, False, {}, {})
        tensors = {"qweight": pack_int4(codes).transpose(1, 2).contiguous(),
                   "scales": scales.transpose(1, 2).contiguous(),
                   "qzeros": torch.zeros(e, k // group, n // 8, dtype=torch.int32),
                   "g_idx": torch.zeros(e, k, dtype=torch.int32)}
        return quant_config, tensors, codes, scales, None
    if method == "awq":
        quant_config = AutoAWQConfig(4, group, True, False)
        tensors = {"qweight": torch.stack([awq_pack(c.T.contiguous(), 4, k, n) for c in codes]),
                   "qzeros": torch.stack([awq_pack(z.T.contiguous(), 4, k // group, n) for z in zeros]),
                   "scales": scales.transpose(1, 2).contiguous()}
        return quant_config, tensors, codes, scales, zeros
    quant_config = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=group)
    tensors = {"weight_packed": pack_int4(codes), "weight_scale": scales,
               "weight_shape": torch.tensor([n, k]).repeat(e, 1)}
    return quant_config, tensors, codes, scales, None


@pytest.fixture
def transformed(monkeypatch):
    """What chord's prepare_and_transform_humming_tensors returns when vLLM calls it, cloned
    (vLLM may write other data over the originals). The outputs must be fresh tensors: vLLM
    0.34 copies each one into a checkpoint parameter's storage, which would corrupt an output
    that is a view of an input."""
    recorded = {}
    transform = facade.prepare_and_transform_humming_tensors

    def recording_transform(**kwargs):
        layer_config, out = transform(**kwargs)
        inputs = {t.untyped_storage().data_ptr() for t in kwargs["tensors"].values()}
        assert not inputs & {t.untyped_storage().data_ptr() for t in out.values()}
        recorded.update({name: tensor.clone() for name, tensor in out.items()})
        return layer_config, out

    monkeypatch.setattr(facade, "prepare_and_transform_humming_tensors", recording_transform)
    return recorded


def _assert_live_params_are(layer, transformed, names):
    """What vLLM's kernels read is chord's packed tensors, byte for byte, whether vLLM kept
    them or copied them into the checkpoint's storage (0.34 does where they fit)."""
    live = _kernel_params(layer)
    assert set(live) == set(names.values())
    for name, param_name in names.items():
        got, want = live[param_name], transformed[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert torch.equal(got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8)), name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("method", ["gptq", "awq", "compressed-tensors"])
def test_vllm_sublayer_flow_in_each_model_dtype(cpu_pack, transformed, monkeypatch, method, dtype):
    """vLLM's own _process_single_sublayer (convert_humming, check_and_fallback_input_schema,
    prepare_and_transform_humming_tensors, the layer's parameters replaced) on a group-128 w13
    sublayer of a model in `dtype`, from the schema dict vLLM's WNA16 oracle builds; chord's
    pack on the CPU (cpu_pack). A float16 model (vLLM's default dtype for GPTQ / AWQ) gets
    chord's float16 format and its float16 scales bit for bit; vLLM's support checks pass."""
    import vllm.model_executor.layers.quantization.utils.humming.schema as vllm_schema
    from vllm.model_executor.layers.fused_moe.experts.fused_humming_moe import HummingExpertsBase
    from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import _humming_wna16_weight_schema
    from vllm.model_executor.layers.quantization.utils.humming.moe import _process_single_sublayer
    import chord_kernels as ck
    from humming import dtypes

    monkeypatch.setattr(vllm_schema, "current_platform", _Hopper())
    e, inter, hidden, group = 2, 64, 256, 128
    n, k = 2 * inter, hidden
    gen = torch.Generator().manual_seed(21)
    quant_config, tensors, codes, scales, zeros = _vllm_moe_checkpoint(method, e, n, k, group, dtype, gen)
    if method != "compressed-tensors":
        assert dtype in quant_config.get_supported_act_dtypes()
    layer = torch.nn.Module()
    # Clones: vLLM 0.34 writes the packed tensors into the checkpoint's storage where they fit.
    for name, tensor in tensors.items():
        layer.register_parameter(f"w13_{name}", torch.nn.Parameter(tensor.clone(), requires_grad=False))
    layer.moe_config = SimpleNamespace(activation=SimpleNamespace(is_gated=True))
    weight_schema = facade.BaseWeightSchema.from_config(_humming_wna16_weight_schema(quant_config))
    final_weight, final_input, config = _process_single_sublayer(
        layer=layer, sublayer_name="w13", shape_n=n, shape_k=k, weight_schema=weight_schema,
        input_schema=facade.HummingInputSchema(), has_bias=False, num_experts=e, param_dtype=dtype)
    model = dtypes.DataType.from_torch_dtype(dtype)
    assert config.a_dtype == model and config.c_dtype == model and config.bs_dtype == model
    assert final_input.a_dtype in (None, model)
    assert config.packed_tag == ck.expected_tag(e, n, k, dtype, zero_point=zeros is not None, group_size=group)
    _assert_live_params_are(layer, transformed, {"weight": "w13_weight", "weight_scale": "w13_weight_scale"})
    (launch,) = cpu_pack
    assert launch["scales"].dtype == dtype
    assert torch.equal(launch["scales"].view(torch.int16), scales.view(torch.int16))
    if zeros is not None:
        got = launch["zero_points"].reshape(e, n, k // group).long()
        assert torch.equal(got, zeros.long())
    # The checks vLLM makes of the result: the input schema kept without a fallback, and the
    # quant key its Humming experts accept.
    kept = vllm_schema.check_and_fallback_input_schema(final_weight, facade.HummingInputSchema(), param_dtype=dtype,
                                                       allow_fallback=False)
    assert kept.a_dtype is None
    weight_key = vllm_schema.weight_schema_to_quant_key(final_weight, dtype)
    assert weight_key.symmetric == (zeros is None)
    assert HummingExpertsBase._supports_quant_scheme(weight_key, vllm_schema.input_schema_to_quant_key(final_input,
                                                                                                        dtype))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["compressed-tensors", "gptq"])
def test_vllm_dense_linear_flow(cpu_pack, transformed, monkeypatch, layout, dtype):
    """A dense W4A16 layer as vLLM's HummingLinearKernel (--linear-backend humming) converts
    it: vLLM's convert_linear_layer_to_humming_standard on the MPLinear layout (a
    compressed-tensors weight_packed [N, K/8], or GPTQ's qweight [K/8, N] with scales
    [K/G, N]), then its prepare_humming_linear_layer_config with the quant config that
    kernel builds; chord's pack on the CPU. The layer's live parameters are chord's packed
    tensors, and the pack got the checkpoint's scales."""
    import vllm.model_executor.layers.quantization.utils.humming.schema as vllm_schema
    from vllm.model_executor.layers.quantization.utils.humming import (
        convert_linear_layer_to_humming_standard, prepare_humming_linear_layer_config)
    import chord_kernels as ck
    from humming.utils.weight import pack_int4

    monkeypatch.setattr(vllm_schema, "current_platform", _Hopper())
    n, k, group = 256, 512, 128
    gen = torch.Generator().manual_seed(31)
    codes = torch.randint(0, 16, (n, k), generator=gen, dtype=torch.int32)
    scales = (torch.rand(n, k // group, generator=gen) * 0.01 + 1e-3).to(dtype)  # [N, K/G]
    words = pack_int4(codes.unsqueeze(0))[0]  # [N, K/8], 8 codes along K per word

    def param(tensor, input_dim, output_dim):
        p = torch.nn.Parameter(tensor.clone(), requires_grad=False)
        p.input_dim, p.output_dim = input_dim, output_dim
        return p

    layer = torch.nn.Module()
    if layout == "gptq":
        layer.register_parameter("qweight", param(words.T.contiguous(), 0, 1))
        layer.register_parameter("scales", param(scales.T.contiguous(), 0, 1))
        # A symmetric GPTQ layer still registers qzeros (v1's stored 8 - 1 in every nibble), and
        # HummingLinearKernel maps it as the zero point beside has_zero_point=False.
        qzeros = torch.full((k // group, n // 8), 0x77777777, dtype=torch.int32)
        layer.register_parameter("qzeros", param(qzeros, 0, 1))
        name_map = {"weight": "qweight", "weight_scale": "scales", "zero_point": "qzeros"}
    else:
        layer.register_parameter("weight_packed", param(words, 1, 0))
        layer.register_parameter("weight_scale", param(scales, 1, 0))
        name_map = {"weight": "weight_packed", "weight_scale": "weight_scale"}
    layer.input_size_per_partition, layer.output_partition_sizes = k, [n // 2, n // 2]
    layer.params_dtype, layer.has_bias = dtype, False

    convert_linear_layer_to_humming_standard(layer=layer, name_map=name_map)
    # The quant config vLLM's HummingLinearKernel builds for a uint4b8 (symmetric) weight.
    config = prepare_humming_linear_layer_config(
        layer, {"quant_method": "humming", "dtype": "int4", "group_size": group, "has_zero_point": False})
    assert config.packed_tag == ck.expected_tag(1, n, k, dtype, zero_point=False, group_size=group)
    _assert_live_params_are(layer, transformed, {"weight": "weight", "weight_scale": "weight_scale"})
    (launch,) = cpu_pack
    assert torch.equal(launch["scales"].reshape(n, -1).view(torch.int16), scales.view(torch.int16))
    assert launch["zero_points"] is None  # the symmetric constant is not a zero point


@pytest.mark.parametrize("method", ["gptq", "awq", "compressed-tensors"])
def test_vllm_direct_reload_is_refused_with_the_way_out(cpu_pack, monkeypatch, method):
    """vLLM 0.34's direct weight reload (VLLM_RELOAD_MODE=direct) views the parameters back to
    the checkpoint's layout, lets the loaders write them, and converts the layer again; but it
    lists the parameters under the kernel's names ('weight', 'weight_scale'), without the
    checkpoint's scales, so no backend can convert them again. The second conversion is
    refused with a ValueError that says so and names the reload mode that works."""
    import vllm
    if vllm.__version__.startswith("0.33"):
        pytest.skip("vLLM 0.33 has no direct weight reload (0.34 added it)")
    import vllm.model_executor.model_loader.reload.direct as direct
    import vllm.model_executor.layers.quantization.utils.humming.schema as vllm_schema
    from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import _humming_wna16_weight_schema
    from vllm.model_executor.layers.quantization.utils.humming.moe import _process_single_sublayer

    monkeypatch.setenv("VLLM_RELOAD_MODE", "direct")
    monkeypatch.setattr(vllm_schema, "current_platform", _Hopper())
    e, n, k, group, dtype = 2, 128, 256, 128, torch.bfloat16
    quant_config, tensors, _, _, _ = _vllm_moe_checkpoint(method, e, n, k, group, dtype,
                                                          torch.Generator().manual_seed(3))
    model, layer = torch.nn.Module(), torch.nn.Module()
    model.add_module("experts", layer)
    for name, tensor in tensors.items():
        layer.register_parameter(f"w13_{name}", torch.nn.Parameter(tensor.clone(), requires_grad=False))
    layer.moe_config = SimpleNamespace(activation=SimpleNamespace(is_gated=True))

    def convert():
        _process_single_sublayer(
            layer=layer, sublayer_name="w13", shape_n=n, shape_k=k,
            weight_schema=facade.BaseWeightSchema.from_config(_humming_wna16_weight_schema(quant_config)),
            input_schema=facade.HummingInputSchema(), has_bias=False, num_experts=e, param_dtype=dtype)

    direct.record_checkpoint_layout(model)
    convert()
    direct.begin_direct_reload(model)
    for name, tensor in tensors.items():  # the loaders write the checkpoint again
        getattr(layer, f"w13_{name}").data.copy_(tensor)
    with pytest.raises(ValueError, match="VLLM_RELOAD_MODE=layerwise"):
        convert()


def test_tuning_rows_are_what_vllm_looks_up():
    from humming import dtypes
    for n, k, e in ((1536, 2048, 128), (2048, 768, 128), (4096, 7168, 48), (512, 256, 8)):
        config = facade.LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                                    bs_dtype=dtypes.bfloat16, shape_n=n, shape_k=k, num_experts=e)
        rows = facade.get_heuristics_config(layer_config=config, use_f16_accum=False, use_batch_invariant=False,
                                            gemm_type=facade.GemmType.INDEXED)
        json.dumps(rows)
        for m in (0, 1, 7, 160, 1000, 8192, 65536, 10 ** 7):
            # HummingIndexedExperts.prepare_humming_moe_kwargs's lookup.
            found = [c["block_shape"][0] for lo, hi, c in rows if m > lo and m <= hi]
            assert len(found) == 1, (n, k, m)
            assert found[0] in (8, 16, 32, 64, 128), found  # blocks chord's indexed kernels hold


@pytest.mark.parametrize("make", [
    lambda: facade.AWQWeightSchema(bits=4, group_size=128, zero_point=False),
    lambda: facade.BaseWeightSchema.from_config({"quant_method": "awq", "bits": 8, "group_size": 128,
                                                 "zero_point": True}),
    lambda: facade.BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                 "desc_act": True, "sym": True}),
    lambda: facade.BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                 "desc_act": True, "sym": False}),
    lambda: facade.BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": 48,
                                                 "desc_act": False, "sym": True}),
    lambda: facade.Fp8InputSchema(),
    lambda: facade.Fp8WeightSchema(),
    lambda: facade.Mxfp4WeightSchema(),
    lambda: facade.GptOssMxfp4WeightSchema(),
    lambda: facade.BitnetWeightSchema(),
    lambda: facade.ModeloptMxfp8WeightSchema(),
    lambda: facade.ModeloptNvfp4InputSchema(),
    lambda: facade.ModeloptNvfp4WeightSchema(),
    lambda: facade.CompressedTensorsInputSchema(num_bits=8),
    lambda: facade.HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=48),
    lambda: facade.HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=128, has_zero_point=True,
                                       is_fp_zero_point=True),
    lambda: facade.HummingInputSchema(a_dtype="float8e4m3"),
])
def test_unsupported_formats_are_refused_by_name(make):
    with pytest.raises(NotImplementedError, match="chord serves INT4 W4A16"):
        make()


def test_gptq_qweight_transposed_is_the_compressed_tensors_form():
    """The claim from_gptq rests on: GPTQ's qweight (vLLM's own gptq_pack) transposed is
    the compressed-tensors word layout of the same codes, which chord's packer reads."""
    from humming.utils.weight import pack_int4
    from vllm.model_executor.layers.quantization.utils.quant_utils import gptq_pack
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (256, 64), generator=gen, dtype=torch.int32)  # [K, N]
    assert torch.equal(gptq_pack(codes, 4, 256, 64).T.contiguous(), pack_int4(codes.T))


def test_awq_unpack_matches_vllms_awq_pack():
    """chord_kernels.checkpoint.unpack_awq reads what vLLM's own awq_pack writes."""
    from chord_kernels.checkpoint import unpack_awq
    from vllm.model_executor.layers.quantization.utils.quant_utils import awq_pack
    gen = torch.Generator().manual_seed(1)
    k, n, group = 256, 64, 128
    codes = torch.randint(0, 16, (k, n), generator=gen, dtype=torch.int32)
    zeros = torch.randint(0, 16, (k // group, n), generator=gen, dtype=torch.int32)
    got_codes, got_zeros = unpack_awq(awq_pack(codes, 4, k, n), awq_pack(zeros, 4, k // group, n))
    assert torch.equal(got_codes[0].to(torch.int32), codes.T)
    assert torch.equal(got_zeros[0].to(torch.int32), zeros.T)


def test_gptq_and_compressed_tensors_zero_points_match_vllms_pack_cols():
    """GPTQ's qzeros [K/G, N/8] and compressed-tensors' weight_zero_point [N/8, K/G] are both
    packed along N in the plain order, as vLLM's pack_cols writes them: the readers return
    the zero points N first (GPTQ v1 + 1, v2 as stored; compressed-tensors' nibble is the
    unsigned zero point)."""
    from chord_kernels.checkpoint import unpack_compressed_tensors_zero_point, unpack_gptq_zeros
    from vllm.model_executor.layers.quantization.utils.quant_utils import pack_cols
    gen = torch.Generator().manual_seed(2)
    k, n, group = 512, 64, 128
    zeros = torch.randint(1, 16, (k // group, n), generator=gen, dtype=torch.int32)
    v2 = unpack_gptq_zeros(pack_cols(zeros, 4, k // group, n), "v2")
    v1 = unpack_gptq_zeros(pack_cols(zeros - 1, 4, k // group, n), "v1")
    assert torch.equal(v2[0].to(torch.int32), zeros.T) and torch.equal(v1[0].to(torch.int32), zeros.T)
    ct = pack_cols(zeros, 4, k // group, n).T.contiguous()  # [N/8, K/G], packed along N
    assert torch.equal(unpack_compressed_tensors_zero_point(ct)[0].to(torch.int32), zeros.T)


_SERVED_CONFIGS = {
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    "gptq asymmetric v2": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": False,
                           "checkpoint_format": "gptq_v2"},
    "gptq channel-wise": {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": True},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "awq, AutoAWQ's key names": {"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": True,
                                 "version": "GEMM"},
}


@pytest.mark.parametrize("label", sorted(_SERVED_CONFIGS))
def test_quantization_humming_creates_every_served_checkpoints_linear_weights(label, monkeypatch):
    """`--quantization humming` on a GPTQ / AWQ checkpoint: vLLM's HummingLinearMethod registers
    the checkpoint's tensors from our schema's get_tensors_attrs, with the shapes the checkpoint
    stores (K 256, N 2 x 128 stacked)."""
    import vllm.model_executor.parameter as vllm_parameter
    from vllm.model_executor.layers.quantization.humming import HummingConfig, HummingLinearMethod
    # vLLM's parameters read the tensor-parallel group: one rank, without a distributed setup.
    monkeypatch.setattr(vllm_parameter, "get_tensor_model_parallel_rank", lambda: 0)
    monkeypatch.setattr(vllm_parameter, "get_tensor_model_parallel_world_size", lambda: 1)
    config = _SERVED_CONFIGS[label]
    layer_config = HummingConfig.from_config(dict(config)).get_quant_config_for_layer(
        "model.layers.0.mlp.gate_up_proj", "linear")
    layer = torch.nn.Module()
    HummingLinearMethod(layer_config).create_weights(layer, 256, [128, 128], 256, 256, torch.float16,
                                                     weight_loader=lambda *args, **kwargs: None)
    # vLLM adds an empty `weight` placeholder where the checkpoint has none.
    params = {name: tuple(p.shape) for name, p in layer.named_parameters() if name != "weight"}
    group = config.get("group_size", config.get("q_group_size"))
    groups = 1 if group == -1 else 256 // group
    if config["quant_method"] == "gptq":
        assert params == {"qweight": (32, 256), "scales": (groups, 256), "qzeros": (groups, 32), "g_idx": (256,)}
    else:
        assert params == {"qweight": (256, 32), "scales": (groups, 256), "qzeros": (groups, 32)}


@pytest.mark.parametrize("config", list(_SERVED_CONFIGS.values()) + [
    {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
     "strategy": "group", "group_size": 128, "symmetric": False},
    {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
     "strategy": "channel", "symmetric": True},
    {"quant_method": "humming", "dtype": "uint4", "group_size": 128, "has_zero_point": True},
])
def test_moe_scales_and_zero_points_are_loadable_by_vllms_moe_loader(config):
    """vLLM's fused-MoE weight loader routes every tensor named *scale* or *zero* by the
    parameter's quant_method (prepare_moe_param copies scale_type into it) and refuses any but
    tensor / channel / group / block: each of our MoE tensors of that kind must carry one."""
    from vllm.model_executor.layers.fused_moe.routed_experts import FusedMoeWeightScaleSupported
    from vllm.model_executor.layers.quantization.humming import prepare_moe_param
    schema = facade.BaseWeightSchema.from_config(dict(config))
    attrs = schema.get_padded_tensors_attrs(shape_n=256, shape_k=256, param_dtype=torch.bfloat16, num_experts=4)
    loaded_by_kind = [name for name in attrs if "scale" in name or "zero" in name]
    assert loaded_by_kind
    supported = {kind.value for kind in FusedMoeWeightScaleSupported}
    for name in loaded_by_kind:
        a = attrs[name]
        param = prepare_moe_param(torch.empty(a["shape"], dtype=a["dtype"]), name, dict(a.get("extra_attrs", {})))
        assert getattr(param, "quant_method", None) in supported, name


@pytest.mark.parametrize("config", list(_SERVED_CONFIGS.values()) + [
    {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
     "strategy": "channel", "symmetric": False},
    {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
     "strategy": "group", "group_size": 64, "symmetric": True},
    {"quant_method": "humming", "dtype": "uint4", "scale_type": "channel", "has_zero_point": True},
])
def test_linear_tensors_construct_as_vllms_parameters(config, monkeypatch):
    """vLLM's linear path builds each tensor's parameter class from its attributes
    (prepare_param): a channel scale with an input dim, for one, fails to construct."""
    import vllm.model_executor.parameter as vllm_parameter
    from vllm.model_executor.layers.quantization.humming import prepare_param
    monkeypatch.setattr(vllm_parameter, "get_tensor_model_parallel_rank", lambda: 0)
    monkeypatch.setattr(vllm_parameter, "get_tensor_model_parallel_world_size", lambda: 1)
    attrs = facade.BaseWeightSchema.from_config(dict(config)).get_tensors_attrs(256, 256, torch.bfloat16)
    for name, a in attrs.items():
        extra = dict(a.get("extra_attrs", {}), weight_loader=lambda *args, **kwargs: None)
        param = prepare_param(torch.empty(a["shape"], dtype=a["dtype"]), name, extra)
        assert tuple(param.shape) == tuple(a["shape"]), name
