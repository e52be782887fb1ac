"""GPU: the humming contract driven exactly as vLLM 0.33 / 0.34's fused Humming MoE experts drive it
(HummingIndexedExperts, HummingGroupedExperts, BatchedHummingGroupedExperts): layer config
from prepare_and_transform_humming_tensors on a compressed-tensors INT4 layer (and GPTQ / AWQ
layers in bfloat16 and float16 models), tuning rows,
moe_align, gate_up humming_forward, may_process_input with the activation, down
humming_forward, top-k weighted sum; against a torch MoE, eagerly and replayed from a CUDA
Graph. Also every activation of vLLM's table, passed as vLLM passes it (the file that
tools/vllm/export_activations.py writes, named by CHORD_VLLM_ACTIVATIONS), against torch."""
import json
import math
import os

import pytest
import torch

import chord_kernels as ck
from humming import dtypes
from humming.config import GemmType, LayerConfig
from humming.forward import humming_forward, may_process_input
from humming.schema import BaseWeightSchema, HummingInputSchema
from humming.transform import prepare_and_transform_humming_tensors
from humming.tune import get_heuristics_config
from humming.utils.weight import pack_int4, pack_zero_point
from chord_kernels.routing import local_expert_ids

pytestmark = pytest.mark.gpu  # skipped without a GPU, with the reason (conftest.py)

# What vLLM's compressed-tensors path hands to BaseWeightSchema.from_config (the oracle's
# _humming_wna16_weight_schema of a Kimi-K2-style checkpoint).
CT_CONFIG = {"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
             "strategy": "group", "group_size": 32, "symmetric": True}
SILU = {"activation_type": "binary_split", "activation_impl": "(a / (1.f + expf(-a))) * b"}


def vllm_activations():
    path = os.environ.get("CHORD_VLLM_ACTIVATIONS")
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def silu_kwargs():
    table = vllm_activations()
    return table["silu"]["kwargs"] if table else SILU


def rel_err(out, ref):
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


# -- torch references -----------------------------------------------------------------------

def _sigmoid(x):
    return torch.sigmoid(x)


def _gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _clamped_swiglu(a, b, limit, alpha, beta):
    g = torch.clamp(a, max=limit)
    u = torch.clamp(b, -limit, limit)
    return g * _sigmoid(alpha * g) * (u + beta)


def reference_activation(name, config, a, b):
    """The activation's definition in float64 (a: the gate half, b: the up half)."""
    config = config or {}
    if name.endswith("_no_mul"):
        return reference_activation(name[: -len("_no_mul")], config, a, torch.ones_like(a))
    if name == "silu":
        return a * _sigmoid(a) * b
    if name == "gelu":
        return _gelu(a) * b
    if name == "gelu_tanh":
        return _gelu_tanh(a) * b
    if name == "relu2":
        return torch.relu(a) ** 2 * b
    if name == "swigluoai":  # gpt-oss: fixed limit, alpha, beta
        return _clamped_swiglu(a, b, 7.0, 1.702, 1.0)
    if name in ("swigluoai_uninterleave", "silu_clamped"):
        return _clamped_swiglu(a, b, config["clamp_limit"], config["alpha"], config["beta"])
    if name == "situ":
        beta, linear = config["activation_situ_beta"], config["activation_situ_linear_beta"]
        gate = beta * torch.tanh(a / beta) * _sigmoid(a)
        return gate * (linear * torch.tanh(b / linear))
    if name == "swiglustep":
        return torch.clamp(a * _sigmoid(a), max=7.0) * torch.clamp(b, -7.0, 7.0)
    raise KeyError(name)


def split_operands(kind, x):
    if kind == "unary":
        return x, torch.ones_like(x)
    n = x.shape[1] // 2
    if kind == "binary_interleaved":
        return x[:, 0::2], x[:, 1::2]
    return x[:, :n], x[:, n:]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_every_vllm_activation_matches_torch(dtype):
    table = vllm_activations()
    if table is None:
        pytest.skip("CHORD_VLLM_ACTIVATIONS is unset: run tools/vllm/export_activations.py where vLLM is installed")
    gen = torch.Generator(device="cuda").manual_seed(5)
    rows, cols = 77, 2 * 264
    x = (torch.randn(rows, cols, device="cuda", generator=gen) * 3).to(dtype)
    for name, entry in sorted(table.items()):
        kwargs = entry["kwargs"]
        kind = kwargs["activation_type"]
        inputs = x[:, : cols // 2].contiguous() if kind == "unary" else x
        out, _, _ = may_process_input(_config_stub(), inputs, outputs=None, **kwargs)
        a, b = split_operands(kind, inputs.double())
        ref = reference_activation(name, entry["config"], a, b)
        torch.testing.assert_close(out.double(), ref.to(dtype).double(), rtol=8e-3, atol=2e-3, msg=name)


def _config_stub():
    """A transformed layer's config, for the calls that only need its device and modes."""
    return LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                       bs_dtype=dtypes.bfloat16, shape_n=256, shape_k=256, num_experts=1,
                       device_index=torch.cuda.current_device())


def test_activation_layouts_and_graph_replay():
    gen = torch.Generator(device="cuda").manual_seed(6)
    rows, n = 40, 128
    x = torch.randn(rows, 2 * n, device="cuda", generator=gen).to(torch.bfloat16)
    a, b = split_operands("binary_split", x.double())
    full = reference_activation("silu", None, a, b).to(torch.bfloat16)
    cfg = _config_stub()
    # Row bound on the device: rows from 25 on keep their contents.
    out = torch.full((rows, n), 7.0, dtype=torch.bfloat16, device="cuda")
    valid = torch.tensor([25], dtype=torch.int64, device="cuda")
    may_process_input(cfg, x, outputs=out, num_valid_tokens=valid, **SILU)
    torch.testing.assert_close(out[:25].double(), full[:25].double(), rtol=8e-3, atol=2e-3)
    assert (out[25:] == 7.0).all()
    # Scatter: row r to scatter_idx[r, c] (two destinations each, -1 skipped, >= bound skipped).
    dest = torch.randperm(2 * rows, device="cuda", generator=gen).view(rows, 2).to(torch.int32)
    dest[3, 1] = -1
    out = torch.full((2 * rows, n), 7.0, dtype=torch.bfloat16, device="cuda")
    bound = torch.tensor([70], dtype=torch.int32, device="cuda")
    may_process_input(cfg, x, outputs=out, layout="scatter", scatter_idx=dest, num_valid_tokens=bound, **SILU)
    expect = torch.full_like(out, 7.0)
    for r in range(rows):
        for c in range(2):
            d = int(dest[r, c])
            if 0 <= d < 70:
                expect[d] = full[r]
    torch.testing.assert_close(out.double(), expect.double(), rtol=8e-3, atol=2e-3)
    # Grouped mask: 4 experts x 10 rows, counts 10, 0, 3, 7.
    counts = torch.tensor([10, 0, 3, 7], dtype=torch.int32, device="cuda")
    out = torch.full((rows, n), 7.0, dtype=torch.bfloat16, device="cuda")
    may_process_input(cfg, x, outputs=out, layout="grouped_mask", expert_tokens=counts, **SILU)
    for g, c in enumerate(counts.tolist()):
        blk = slice(10 * g, 10 * g + c)
        torch.testing.assert_close(out[blk].double(), full[blk].double(), rtol=8e-3, atol=2e-3)
        assert (out[10 * g + c: 10 * g + 10] == 7.0).all()
    # CUDA Graph: the same call replays onto new inputs.
    static_out = torch.empty(rows, n, dtype=torch.bfloat16, device="cuda")
    may_process_input(cfg, x, outputs=static_out, **SILU)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        may_process_input(cfg, x, outputs=static_out, **SILU)
    x.copy_(torch.randn(rows, 2 * n, device="cuda", generator=gen).to(torch.bfloat16))
    graph.replay()
    a, b = split_operands("binary_split", x.double())
    torch.testing.assert_close(static_out.double(), reference_activation("silu", None, a, b).to(torch.bfloat16)
                               .double(), rtol=8e-3, atol=2e-3)
    # Refused before launch: an expression that could leave the kernel.
    with pytest.raises(ValueError, match="expression"):
        may_process_input(cfg, x, outputs=out, activation_type="binary_split", activation_impl="a); } (b")


# -- the MoE flow ---------------------------------------------------------------------------

def ct_sublayer(e, n, k, gen, group, zero_point=False, dtype=torch.bfloat16):
    """A compressed-tensors pack-quantized sublayer as vLLM's CT MoE layer holds it, and the
    dense weight it stands for in the model dtype T (W = T((code - 8) * scale); with
    zero_point, symmetric: false: weight_zero_point int32 [E, N/8, K/G] and
    W = T((code - zero) * scale))."""
    codes = torch.randint(0, 16, (e, n, k), dtype=torch.uint8, device="cuda", generator=gen)
    scale = (torch.rand(e, n, k // group, device="cuda", generator=gen) * 0.01 + 0.002).to(dtype)
    zeros = torch.randint(0, 16, (e, n, k // group), device="cuda", generator=gen) if zero_point else None
    zero = zeros.float().repeat_interleave(group, -1) if zero_point else 8
    dense = ((codes.float() - zero) * scale.float().repeat_interleave(group, -1)).to(dtype)
    tensors = {"weight_packed": pack_int4(codes), "weight_scale": scale,
               "weight_shape": torch.tensor([n, k], device="cuda").expand(e, 2)}
    if zero_point:
        tensors["weight_zero_point"] = pack_zero_point(zeros)
    return tensors, dense


AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AWQ's nibble i of a word holds column 8c + AWQ_ORDER[i]


def awq_words(values):
    """[E, R, N] 0..15 -> int32 [E, R, N/8] in AWQ's interleaved column order."""
    n = values.shape[-1]
    perm = torch.arange(n, device=values.device).view(-1, 8)[:, list(AWQ_ORDER)].reshape(-1)
    return pack_int4(values[..., perm])


def checkpoint_sublayer(method, e, n, k, gen, group, dtype):
    """A GPTQ (symmetric, uint4b8) or AWQ (zero points) group-`group` sublayer as vLLM's MoE
    methods register it in a model of `dtype` (params_dtype: the scales are stored in it, and
    vLLM's loader rounds the checkpoint's float16 scales into it), the schema dict vLLM's WNA16
    oracle builds for it, and the dense weight dtype((code - zero) * scale)."""
    codes = torch.randint(0, 16, (e, n, k), dtype=torch.uint8, device="cuda", generator=gen)
    scale = (torch.rand(e, n, k // group, device="cuda", generator=gen) * 0.01 + 0.002).to(torch.float16).to(dtype)
    if method == "gptq":
        zeros = torch.full((e, n, k // group), 8, dtype=torch.int64, device="cuda")
        config = {"quant_method": "gptq", "bits": 4, "group_size": group, "desc_act": False, "sym": True}
        tensors = {"qweight": pack_int4(codes).transpose(1, 2).contiguous(),  # [E, K/8, N]
                   "qzeros": torch.zeros(e, k // group, n // 8, dtype=torch.int32, device="cuda"),
                   "g_idx": torch.zeros(e, k, dtype=torch.int32, device="cuda")}
    else:
        zeros = torch.randint(0, 16, (e, n, k // group), device="cuda", generator=gen)
        config = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True}
        tensors = {"qweight": awq_words(codes.transpose(1, 2)),  # [E, K, N/8]
                   "qzeros": awq_words(zeros.transpose(1, 2))}  # [E, K/G, N/8]
    tensors["scales"] = scale.transpose(1, 2).contiguous()  # [E, K/G, N]
    dense = ((codes.float() - zeros.float().repeat_interleave(group, -1))
             * scale.float().repeat_interleave(group, -1)).to(dtype)
    return config, tensors, dense


def transform(e, n, k, stacks, gen, group, zero_point=False, dtype=torch.bfloat16, method="compressed-tensors"):
    """vLLM's convert_to_humming_moe_kernel_format for one sublayer of a model in `dtype`."""
    if method == "compressed-tensors":
        tensors, dense = ct_sublayer(e, n, k, gen, group, zero_point, dtype)
        schema = BaseWeightSchema.from_config(dict(CT_CONFIG, group_size=group, symmetric=not zero_point))
    else:
        config, tensors, dense = checkpoint_sublayer(method, e, n, k, gen, group, dtype)
        zero_point = method == "awq"
        schema = BaseWeightSchema.from_config(config)
    weight_schema, tensors = schema.convert_humming(tensors=tensors, shape_n_stacks=stacks, shape_k_stacks=[k],
                                                    param_dtype=dtype, num_experts=e)
    input_schema, _ = HummingInputSchema().convert_humming(tensors=tensors, shape_n_stacks=stacks,
                                                           shape_k_stacks=[k], param_dtype=dtype,
                                                           num_experts=e)
    config, tensors = prepare_and_transform_humming_tensors(
        tensors=tensors, shape_n=n, shape_k=k, pad_n_to_multiple=256, pad_k_to_multiple=128,
        input_schema=input_schema, weight_schema=weight_schema, has_bias=False, num_experts=e,
        torch_dtype=dtype, device=torch.device("cuda"))
    assert tensors["weight"].size(0) == e and config.shape_n - config.pad_shape_n == n
    assert config.has_zero_point == zero_point and set(tensors) == {"weight", "weight_scale"}
    assert config.torch_dtype is dtype and config.packed_tag == ck.expected_tag(e, n, k, dtype, zero_point, group)
    return config, tensors, dense


class Model:
    """One MoE layer's transformed sublayers, and the dense weights they stand for."""

    def __init__(self, hidden, inter, local, global_experts, gemm_type, seed, group=32, zero_point=False,
                 dtype=torch.bfloat16, method="compressed-tensors"):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.hidden, self.inter, self.local, self.global_experts = hidden, inter, local, global_experts
        self.dtype = dtype
        self.cfg13, self.t13, self.d13 = transform(local, 2 * inter, hidden, [inter, inter], gen, group, zero_point,
                                                   dtype, method)
        self.cfg2, self.t2, self.d2 = transform(local, hidden, inter, [hidden], gen, group, zero_point, dtype, method)
        self.gemm_type = gemm_type
        self.compute = json.dumps({"use_batch_invariant": False, "use_f16_accum": False,
                                   "gemm_type": gemm_type.value})
        self.rows13 = get_heuristics_config(layer_config=self.cfg13, use_f16_accum=False, use_batch_invariant=False,
                                            gemm_type=gemm_type)
        self.rows2 = get_heuristics_config(layer_config=self.cfg2, use_f16_accum=False, use_batch_invariant=False,
                                           gemm_type=gemm_type)
        self.locks = torch.zeros(torch.cuda.get_device_properties(0).multi_processor_count * 8, dtype=torch.int32,
                                 device="cuda")
        self.act = silu_kwargs()

    def forward(self, sublayer, inputs, outputs, **kwargs):
        cfg, t = (self.cfg13, self.t13) if sublayer == "w13" else (self.cfg2, self.t2)
        tuning = json.dumps(self.rows13 if sublayer == "w13" else self.rows2)
        return humming_forward(cfg, inputs=inputs, weight=t["weight"], weight_scale=t["weight_scale"],
                               zero_point=None, bias=None, weight_scale_2=None, input_scale=None,
                               input_scale_2=None, outputs=outputs, locks=self.locks,
                               compute_config=self.compute, tuning_config=tuning, **kwargs)

    def valid_shape_m(self, topk_ids):
        return math.ceil(topk_ids.numel() * self.local / self.global_experts)


def block_of(rows, m):
    for lower, upper, config in rows:
        if lower < m <= upper:
            return config["block_shape"][0]
    return 64


def indexed_apply(model, hidden_states, topk_weights, topk_ids, expert_map):
    """HummingIndexedExperts.apply."""
    m, top_k = topk_ids.shape
    valid_shape_m = model.valid_shape_m(topk_ids)
    block = block_of(model.rows13, valid_shape_m)
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, block, model.local, expert_map)
    scatter_idx = None
    if expert_map is not None:  # vLLM's masked identity: the route's own row, -1 off this rank
        flat = torch.arange(topk_ids.numel(), dtype=torch.int32, device="cuda")
        local = local_expert_ids(topk_ids.reshape(-1).long(), expert_map) >= 0
        scatter_idx = torch.where(local, flat, torch.full_like(flat, -1)).view(-1, 1)
    common = dict(sorted_ids=sorted_ids, expert_ids=expert_ids, num_tokens_padded=ntp, valid_shape_m=valid_shape_m)
    gate_up = torch.empty(m * top_k, 2 * model.inter, dtype=model.dtype, device="cuda")
    down_in = torch.empty(m * top_k, model.inter, dtype=model.dtype, device="cuda")
    down_out = torch.empty(m * top_k, model.hidden, dtype=model.dtype, device="cuda")
    inputs, _, _ = may_process_input(model.cfg13, inputs=hidden_states, outputs=None, token_scales=None,
                                     hadamard_block_size=0, layout="normal", expert_tokens=None, scatter_idx=None,
                                     num_valid_tokens=None)
    model.forward("w13", inputs, gate_up, top_k=top_k, **common)
    w2_block = block_of(model.rows2, valid_shape_m)
    if w2_block != block:
        sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, w2_block, model.local, expert_map)
        common.update(sorted_ids=sorted_ids, expert_ids=expert_ids, num_tokens_padded=ntp)
    inputs, _, _ = may_process_input(model.cfg2, inputs=gate_up, outputs=down_in, token_scales=None,
                                     hadamard_block_size=0, layout="scatter" if scatter_idx is not None else "normal",
                                     expert_tokens=None, scatter_idx=scatter_idx, num_valid_tokens=None, **model.act)
    model.forward("w2", inputs, down_out, top_k=1, **common)
    # moe_fused_mul_sum's mask: routes off this rank or with an invalid id (-1) add nothing.
    weights = topk_weights.float() * (local_expert_ids(topk_ids.long(), expert_map) >= 0)
    rows = down_out.view(m, top_k, model.hidden).float()
    rows = torch.where(weights.unsqueeze(-1) != 0, rows, torch.zeros_like(rows))  # rows never written
    return (rows * weights.unsqueeze(-1)).sum(1).to(model.dtype)


def prepare_scatter(topk_ids, expert_map, local_experts):
    """moe_prepare_scatter: routes sorted by local expert; (expert_first_token_offset int64
    [E + 1], destination row of each route [M, top_k], off-rank routes past the end)."""
    local = local_expert_ids(topk_ids.reshape(-1).long(), expert_map)
    bucket = torch.where(local >= 0, local, torch.full_like(local, local_experts))
    order = torch.sort(bucket, stable=True).indices
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device="cuda")
    counts = torch.zeros(local_experts + 1, dtype=torch.int64, device="cuda")
    counts.scatter_add_(0, bucket, torch.ones_like(bucket))
    counts = counts[:local_experts]
    offsets = torch.zeros(local_experts + 1, dtype=torch.int64, device="cuda")
    offsets[1:] = torch.cumsum(counts, 0)
    return offsets, inverse.to(torch.int32).view(topk_ids.shape)


def grouped_apply(model, hidden_states, topk_weights, topk_ids, expert_map):
    """HummingGroupedExperts.apply (the path without pre-quantized inputs)."""
    m, top_k = topk_ids.shape
    valid_shape_m = model.valid_shape_m(topk_ids)
    offsets, scatter_idx = prepare_scatter(topk_ids, expert_map, model.local)
    permuted = torch.empty(m * top_k, model.hidden, dtype=model.dtype, device="cuda")
    gate_up = torch.empty(m * top_k, 2 * model.inter, dtype=model.dtype, device="cuda")
    down_in = torch.empty(m * top_k, model.inter, dtype=model.dtype, device="cuda")
    down_out = torch.empty(m * top_k, model.hidden, dtype=model.dtype, device="cuda")
    inputs, _, _ = may_process_input(model.cfg13, inputs=hidden_states, outputs=permuted, token_scales=None,
                                     hadamard_block_size=0, layout="scatter", expert_tokens=None,
                                     scatter_idx=scatter_idx, num_valid_tokens=offsets[-1:])
    model.forward("w13", inputs, gate_up, valid_shape_m=valid_shape_m, expert_layout=offsets)
    inputs, _, _ = may_process_input(model.cfg2, inputs=gate_up, outputs=down_in, token_scales=None,
                                     hadamard_block_size=0, layout="normal", expert_tokens=None, scatter_idx=None,
                                     num_valid_tokens=offsets[-1:], **model.act)
    model.forward("w2", inputs, down_out, valid_shape_m=valid_shape_m, expert_layout=offsets)
    # moe_unpermute: each token's routes from their permuted rows, off-rank routes dropped.
    valid = scatter_idx.long() < offsets[-1]
    rows = down_out[scatter_idx.long().clamp(max=m * top_k - 1)].float()
    weights = topk_weights.float() * valid
    rows = torch.where(valid.unsqueeze(-1), rows, torch.zeros_like(rows))
    return (rows * weights.unsqueeze(-1)).sum(1).to(model.dtype)


def batched_apply(model, hidden_states, expert_num_tokens, valid_shape_m):
    """BatchedHummingGroupedExperts.apply: hidden_states [E, max_tokens, K]."""
    e, max_tokens, _ = hidden_states.shape
    flat = hidden_states.view(-1, model.hidden)
    gate_up = torch.empty(e * max_tokens, 2 * model.inter, dtype=model.dtype, device="cuda")
    down_in = torch.empty(e * max_tokens, model.inter, dtype=model.dtype, device="cuda")
    out = torch.zeros(e, max_tokens, model.hidden, dtype=model.dtype, device="cuda")
    inputs, _, _ = may_process_input(model.cfg13, inputs=flat, outputs=None, token_scales=None,
                                     hadamard_block_size=0, layout="grouped_mask", expert_tokens=expert_num_tokens,
                                     scatter_idx=None, num_valid_tokens=None)
    assert inputs is flat  # nothing to do: no copy
    model.forward("w13", inputs, gate_up, valid_shape_m=valid_shape_m, expert_layout=expert_num_tokens)
    inputs, _, _ = may_process_input(model.cfg2, inputs=gate_up, outputs=down_in, token_scales=None,
                                     hadamard_block_size=0, layout="grouped_mask", expert_tokens=expert_num_tokens,
                                     scatter_idx=None, num_valid_tokens=None, **model.act)
    model.forward("w2", inputs, out.view(-1, model.hidden), valid_shape_m=valid_shape_m,
                  expert_layout=expert_num_tokens)
    return out


def expert_ffn(model, e, x):
    """One expert on rows x [r, hidden] in fp32 on the dequantized weights, rounding where the
    kernels round (to the model dtype between steps)."""
    h = (x.float() @ model.d13[e].float().T).to(model.dtype).float()
    a = (torch.nn.functional.silu(h[:, : model.inter]) * h[:, model.inter:]).to(model.dtype)
    return a.float() @ model.d2[e].float().T


def reference_moe(model, x, topk_weights, topk_ids, expert_map):
    out = torch.zeros(x.shape[0], model.hidden, device="cuda")
    local = local_expert_ids(topk_ids.long(), expert_map)
    for e in range(model.local):
        tok, slot = torch.nonzero(local == e, as_tuple=True)
        if tok.numel():
            out.index_add_(0, tok, expert_ffn(model, e, x[tok]) * topk_weights[tok, slot].float().unsqueeze(-1))
    return out


# Kimi-K2 on 8 ranks (384 experts, 48 local, top 8, hidden 7168, expert width 2048) and
# Qwen3-30B-A3B (128 experts, top 8, hidden 2048, expert width 768) on one GPU.
SHAPES = {"kimi_k2_ep8": (7168, 2048, 48, 384, 8), "qwen3_30b_a3b": (2048, 768, 128, 128, 8)}
_models = {}


def model_for(shape, gemm_type, group=32, zero_point=False, dtype=torch.bfloat16, method="compressed-tensors"):
    key = (shape, gemm_type, group, zero_point, dtype, method)
    if key not in _models:
        _models.clear()  # one model at a time: the Kimi layer's dense reference is 4 GB
        hidden, inter, local, global_experts, _ = SHAPES[shape]
        _models[key] = Model(hidden, inter, local, global_experts, gemm_type, seed=len(shape), group=group,
                             zero_point=zero_point, dtype=dtype, method=method)
    return _models[key]


def routing(shape, tokens, seed, dtype=torch.bfloat16):
    hidden, _, local, global_experts, top_k = SHAPES[shape]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(tokens, hidden, device="cuda", generator=gen).to(dtype)
    logits = torch.randn(tokens, global_experts, device="cuda", generator=gen)
    topk_weights, topk_ids = torch.softmax(logits, -1).topk(top_k, dim=-1)
    expert_map = None
    if global_experts != local:  # this rank owns global experts 96..143
        expert_map = torch.full((global_experts,), -1, dtype=torch.int32, device="cuda")
        expert_map[96:96 + local] = torch.arange(local, dtype=torch.int32, device="cuda")
    return x, topk_weights, topk_ids.to(torch.int32), expert_map


APPLY = {GemmType.INDEXED: indexed_apply, GemmType.GROUPED_CONTIGUOUS: grouped_apply}


@pytest.mark.parametrize("gemm_type", [GemmType.INDEXED, GemmType.GROUPED_CONTIGUOUS])
@pytest.mark.parametrize("shape,tokens", [("kimi_k2_ep8", 1), ("kimi_k2_ep8", 20), ("kimi_k2_ep8", 300),
                                          ("qwen3_30b_a3b", 1), ("qwen3_30b_a3b", 64), ("qwen3_30b_a3b", 600),
                                          ("qwen3_30b_a3b", 0)])
def test_vllm_flow_against_torch(gemm_type, shape, tokens):
    model = model_for(shape, gemm_type)
    x, w, ids, emap = routing(shape, tokens, seed=tokens + 1)
    out = APPLY[gemm_type](model, x, w, ids, emap)
    assert out.shape == (tokens, model.hidden)
    if tokens:
        assert rel_err(out, reference_moe(model, x, w, ids, emap)) < 2e-2


@pytest.mark.parametrize("group", [128, 64])
@pytest.mark.parametrize("tokens", [1, 64])
def test_vllm_flow_coarser_groups(group, tokens):
    """A compressed-tensors group-64 / group-128 checkpoint (Qwen3-30B-A3B shapes) through
    the same flow: the transform keeps the group, the result matches its own dense weights."""
    model = model_for("qwen3_30b_a3b", GemmType.INDEXED, group)
    assert model.cfg13.weight_scale_group_size == group and model.cfg2.weight_scale_group_size == group
    x, w, ids, emap = routing("qwen3_30b_a3b", tokens, seed=tokens + 5)
    out = indexed_apply(model, x, w, ids, emap)
    assert rel_err(out, reference_moe(model, x, w, ids, emap)) < 2e-2


@pytest.mark.parametrize("gemm_type", [GemmType.INDEXED, GemmType.GROUPED_CONTIGUOUS])
@pytest.mark.parametrize("tokens", [0, 1, 64, 600])
def test_vllm_flow_zero_points(gemm_type, tokens):
    """compressed-tensors symmetric: false group-128 (Qwen3-30B-A3B shapes): the transform
    folds weight_zero_point into the packed scales (no zero_point tensor is handed back) and
    the flow matches the dense weights bf16((code - zero) * scale)."""
    model = model_for("qwen3_30b_a3b", gemm_type, 128, zero_point=True)
    assert model.cfg13.has_zero_point and model.cfg2.has_zero_point
    x, w, ids, emap = routing("qwen3_30b_a3b", tokens, seed=tokens + 7)
    out = APPLY[gemm_type](model, x, w, ids, emap)
    assert out.shape == (tokens, model.hidden)
    if tokens:
        assert rel_err(out, reference_moe(model, x, w, ids, emap)) < 2e-2


@pytest.mark.parametrize("gemm_type", [GemmType.INDEXED, GemmType.GROUPED_CONTIGUOUS])
@pytest.mark.parametrize("tokens", [0, 1, 64, 600])
@pytest.mark.parametrize("method", ["gptq", "awq"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_vllm_flow_gptq_awq_model_dtypes(dtype, method, gemm_type, tokens):
    """GPTQ group-128 (symmetric) and AWQ group-128 (zero points) layers, Qwen3-30B-A3B shapes,
    in a bfloat16 or a float16 model (vLLM's default dtype for them: params_dtype float16, the
    scales stored in it, float16 activations): the transform packs that dtype's group-128
    format, and the
    flow takes and returns that dtype and matches an fp32 MoE on the dequantized weights."""
    model = model_for("qwen3_30b_a3b", gemm_type, 128, dtype=dtype, method=method)
    fmt = {torch.bfloat16: ck.FORMAT_INT4_G128, torch.float16: ck.FORMAT_INT4_G128_FP16}[dtype]
    if method == "awq":
        fmt = {torch.bfloat16: ck.FORMAT_INT4_G128_ZP, torch.float16: ck.FORMAT_INT4_G128_ZP_FP16}[dtype]
    for cfg in (model.cfg13, model.cfg2):
        assert cfg.torch_dtype is dtype and cfg.has_zero_point == (method == "awq") and cfg.packed_tag[1] == fmt
    x, w, ids, emap = routing("qwen3_30b_a3b", tokens, seed=tokens + 9, dtype=dtype)
    out = APPLY[gemm_type](model, x, w, ids, emap)
    assert out.shape == (tokens, model.hidden) and out.dtype == dtype
    if tokens:
        assert out.isfinite().all()
        assert rel_err(out, reference_moe(model, x, w, ids, emap)) < 2e-2
    with pytest.raises(ValueError, match=f"transformed for {dtype}"):  # the other dtype never reaches a kernel
        other = torch.bfloat16 if dtype == torch.float16 else torch.float16
        model.forward("w2", torch.zeros(4, model.inter, dtype=other, device="cuda"), None,
                      expert_layout=torch.zeros(model.local + 1, dtype=torch.int64, device="cuda"))


@pytest.mark.parametrize("gemm_type", [GemmType.INDEXED, GemmType.GROUPED_CONTIGUOUS])
def test_vllm_flow_padded_rows(gemm_type):
    """vLLM 0.34's padded activation format (an all-to-all that pads its receive buffer):
    a padding row has every top-k id -1 and data that may be garbage (NaN here). The real
    rows match the MoE of the real rows alone; nothing of a padding row reaches them."""
    model = model_for("kimi_k2_ep8", gemm_type)
    x, w, ids, emap = routing("kimi_k2_ep8", 24, seed=13)
    # This rank owns the last 48 global experts, so a -1 read as a negative index (the last
    # expert, a local one) would be routed, not dropped.
    emap = torch.full_like(emap, -1)
    emap[-model.local:] = torch.arange(model.local, dtype=torch.int32, device="cuda")
    pad = torch.arange(24, device="cuda") % 3 == 0
    ids[pad] = -1
    x[pad] = float("nan")
    out = APPLY[gemm_type](model, x, w, ids, emap)
    real = ~pad
    assert out[real].isfinite().all()
    assert rel_err(out[real], reference_moe(model, x[real], w[real], ids[real], emap)) < 2e-2


@pytest.mark.parametrize("gemm_type", [GemmType.INDEXED, GemmType.GROUPED_CONTIGUOUS])
def test_vllm_flow_cuda_graph(gemm_type):
    shape = "kimi_k2_ep8"
    model = model_for(shape, gemm_type)
    x, w, ids, emap = routing(shape, 24, seed=3)
    apply = APPLY[gemm_type]
    apply(model, x, w, ids, emap)  # compiles and loads outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = apply(model, x, w, ids, emap)
    x2, w2, ids2, _ = routing(shape, 24, seed=4)
    x.copy_(x2), w.copy_(w2), ids.copy_(ids2)
    graph.replay()
    assert rel_err(static_out, reference_moe(model, x, w, ids, emap)) < 2e-2


@pytest.mark.parametrize("shape,max_tokens", [("kimi_k2_ep8", 16), ("qwen3_30b_a3b", 8)])
def test_vllm_batched_flow_and_graph(shape, max_tokens):
    model = model_for(shape, GemmType.GROUPED_MASKED)
    gen = torch.Generator(device="cuda").manual_seed(max_tokens)
    hidden_states = torch.randn(model.local, max_tokens, model.hidden, device="cuda", generator=gen)
    hidden_states = hidden_states.to(torch.bfloat16)
    counts = torch.randint(0, max_tokens + 1, (model.local,), dtype=torch.int32, device="cuda", generator=gen)
    counts[0], counts[1] = 0, max_tokens
    valid_shape_m = int(counts.sum())
    out = batched_apply(model, hidden_states, counts, valid_shape_m)
    for e in range(model.local):
        c = int(counts[e])
        if c:
            assert rel_err(out[e, :c], expert_ffn(model, e, hidden_states[e, :c])) < 2e-2, e
        assert (out[e, c:] == 0).all()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = batched_apply(model, hidden_states, counts, valid_shape_m)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(static_out, out)
