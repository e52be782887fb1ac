"""Bad values and bad arguments in the Python API answer with a named error before anything
is packed, allocated or launched (CPU: the pack launch is replaced by the cpu_pack recorder,
and every check runs before a launch)."""
import math

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import chord_kernels as ck
from chord_kernels import _ops, nf4

E, N, K = 1, 64, 128


def codes(fill=None, dtype=torch.uint8):
    if fill is None:
        return torch.randint(0, 16, (E, N, K), dtype=dtype)
    return torch.full((E, N, K), fill, dtype=dtype)


def ones_scale(dtype=torch.float32, group=32):
    return torch.ones(E, N, K // group, dtype=dtype)


@pytest.mark.parametrize("bad, dtype", [(16, torch.uint8), (255, torch.uint8), (-1, torch.int32), (16, torch.int32)])
def test_pack_refuses_codes_outside_a_nibble(cpu_pack, bad, dtype):
    weight = codes(dtype=dtype)
    weight[0, 3, 5] = bad
    with pytest.raises(ValueError, match=r"codes must be in 0\.\.15"):
        ck.pack_w4a16(weight, ones_scale())
    assert not cpu_pack
    ck.pack_w4a16(codes(15, dtype), ones_scale())  # the domain's ends pack
    ck.pack_w4a16(codes(0, dtype), ones_scale())
    assert len(cpu_pack) == 2


@pytest.mark.parametrize("value, dtype, what", [
    (float("nan"), torch.bfloat16, "nan"),
    (float("inf"), torch.bfloat16, "inf"),
    (1e5, torch.float16, "inf"),      # above fp16's 65504: the cast overflows
    (1e-9, torch.float16, "0.0"),     # below fp16's smallest subnormal: the cast flushes
    (1e39, torch.bfloat16, "inf"),    # float64 past bf16's range
])
def test_pack_refuses_scales_that_are_not_finite_in_the_packed_dtype(cpu_pack, value, dtype, what):
    scale = ones_scale(torch.float64 if value == 1e39 else torch.float32)
    scale[0, 7, 2] = value
    with pytest.raises(ValueError, match=r"\(0, 7, 2\).* " + what + r" in torch\.(bfloat16|float16)"):
        ck.pack_w4a16(codes(), scale, dtype=dtype)
    assert not cpu_pack


def test_pack_keeps_zero_and_representable_scales(cpu_pack):
    scale = ones_scale()
    scale[0, 0, 0] = 0.0    # a zero scale is a zero group, not a rounding
    scale[0, 1, 0] = 6e-8   # fp16 subnormal: rounds, but not to zero
    scale[0, 2, 0] = -0.25
    ck.pack_w4a16(codes(), scale, dtype=torch.float16)
    (launch,) = cpu_pack
    assert launch["scales"][0, 0, 0].item() == 0.0 and launch["scales"][0, 1, 0].item() > 0


def test_pack_refuses_arguments_that_are_not_tensors(cpu_pack):
    with pytest.raises(TypeError, match="'weight' must be a torch.Tensor, got ndarray"):
        ck.pack_w4a16(np.zeros((E, N, K), np.uint8), ones_scale())
    with pytest.raises(TypeError, match="'scale' must be a torch.Tensor, got list"):
        ck.pack_w4a16(codes(), [[1.0] * 4] * N)
    with pytest.raises(TypeError, match="'zero_point' must be a torch.Tensor, got list"):
        ck.pack_w4a16(codes(), ones_scale(), zero_point=[[8] * 4] * N)
    assert not cpu_pack


def pack_op_args(**change):
    args = dict(src=torch.empty(E, N, K, dtype=torch.uint8), src_format=0,
                scales=torch.empty(E, N, K // 32, dtype=torch.bfloat16),
                weight_out=torch.empty(_ops._C.weight_bytes(E, N, K), dtype=torch.uint8),
                scales_out=torch.empty(_ops._C.scale_bytes(E, N, K), dtype=torch.uint8))
    args.update(change)
    return args


@pytest.mark.parametrize("change, message", [
    (dict(weight_out=torch.empty(1, dtype=torch.uint8)), "packed weight buffer must be contiguous uint8"),
    (dict(scales_out=torch.empty(16, dtype=torch.float32)), "packed scales buffer must be contiguous uint8"),
    (dict(src=torch.empty(E, N, K, dtype=torch.bfloat16)), "'src' must be torch.uint8"),
    (dict(src=torch.empty(E, N, K // 8, dtype=torch.int32)), "'src' must be torch.uint8"),
    (dict(src_format=1), "'src' must be torch.int32"),
    (dict(src=torch.empty(E, N, K * 2, dtype=torch.uint8)), "'src' must have shape"),
    (dict(scales=torch.empty(E, N, K // 32, dtype=torch.float16)), "'scales' must be torch.bfloat16"),
    (dict(src_format=0x40), "'src_format' must be"),
    (dict(src_format=-1), "'src_format' must be"),
    (dict(scales=torch.empty(E, N - 8, K // 32, dtype=torch.bfloat16)), "N a positive multiple of 16"),
])
def test_the_pack_op_checks_its_buffers_and_sources(change, message):
    """torch.ops.chord.w4a16_pack hands raw pointers to a library that writes weight_bytes
    through weight_out: its checks (the launch's and the tracing fake's) see every size."""
    args = pack_op_args(**change)
    with pytest.raises(ValueError, match=message):
        _ops._check_pack_args(**args)
    with FakeTensorMode() as mode, pytest.raises(ValueError, match=message):
        fake = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
        torch.ops.chord.w4a16_pack(**fake)


def test_the_pack_op_accepts_what_pack_w4a16_hands_it():
    assert _ops._check_pack_args(**pack_op_args()) == (E, N, K)
    g128 = pack_op_args(src_format=_ops.SRC_GROUP_128 | _ops.SRC_SCALES_FP16,
                        scales=torch.empty(E, N, K // 128, dtype=torch.float16),
                        scales_out=torch.empty(_ops._C.format_scale_bytes(ck.FORMAT_INT4_G128_FP16, E, N, K),
                                               dtype=torch.uint8))
    assert _ops._check_pack_args(**g128) == (E, N, K)
    compressed = pack_op_args(src_format=_ops.SRC_COMPRESSED, src=torch.empty(E, N, K // 8, dtype=torch.int32))
    assert _ops._check_pack_args(**compressed) == (E, N, K)


def cpu_weight(tag):
    e, n, k = 2, 64, 128
    return ck.W4A16Weight(torch.zeros(_ops._C.weight_bytes(e, n, k), dtype=torch.uint8),
                          torch.zeros(_ops._C.scale_bytes(e, n, k), dtype=torch.uint8), tag)


@pytest.mark.parametrize("field, value, message", [
    (4, -1, "shape E=-1"), (4, 2 ** 40, "out of the packed layout.s range"), (4, 3, "buffer must be contiguous uint8"), (0, 0x1234, "not a chord packed weight"),
    (6, 100, "shape E=2 N=64 K=100"),
])
def test_operators_check_the_tag_before_allocating_their_output(field, value, message):
    tag = list(ck.expected_tag(2, 64, 128))
    tag[field] = value
    p = cpu_weight(tuple(tag))
    with pytest.raises(ValueError, match=message):
        ck.dequantize(p)
    a = torch.zeros(4, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=message):
        ck.offsets(a, p, torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match=message):
        ck.indexed(a, p, torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32),
                   torch.zeros(1, dtype=torch.int32), 2, block_size=16)


def test_indexed_checks_top_k_before_allocating():
    p = cpu_weight(ck.expected_tag(2, 64, 128))
    with pytest.raises(ValueError, match=r"top_k must be in 1\.\.1024, got -1"):
        ck.indexed(torch.zeros(4, 128, dtype=torch.bfloat16), p, torch.zeros(16, dtype=torch.int32),
                   torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), -1, block_size=16)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(block_size=0), ValueError, r"block_size must be a multiple of 8 in 8\.\.1024"),
    (dict(block_size=12), ValueError, r"block_size must be a multiple of 8 in 8\.\.1024"),
    (dict(block_size=-16), ValueError, r"block_size must be a multiple of 8 in 8\.\.1024"),
    (dict(block_size=2048), ValueError, r"block_size must be a multiple of 8 in 8\.\.1024"),
    (dict(block_size=16.0), TypeError, "'block_size' must be an int"),
    (dict(num_experts=0), ValueError, "num_experts must be >= 1"),
    (dict(topk_ids=torch.tensor([[1.7, 0.2]])), TypeError, "'topk_ids' must hold integer expert ids"),
    (dict(topk_ids=[[1, 0]]), TypeError, "'topk_ids' must be a torch.Tensor"),
    (dict(expert_map=torch.tensor([0.5, 1.9, 2.2, 3.0])), TypeError, "'expert_map' must hold integer"),
    (dict(expert_map=torch.tensor([[0, 1, 2, 3]])), ValueError, r"'expert_map' must be 1-D .* got shape \(1, 4\)"),
    (dict(expert_map=torch.tensor([[0], [1], [2], [3]])), ValueError, "'expert_map' must be 1-D"),
])
def test_moe_align_block_size_checks_its_arguments(kwargs, error, message):
    args = dict(topk_ids=torch.tensor([[1, 0]]), block_size=16, num_experts=4, expert_map=None)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        ck.moe_align_block_size(**args)


def test_moe_align_block_size_takes_integer_like_sizes():
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(torch.tensor([[1, 0]], dtype=torch.int32),
                                                          np.int64(16), np.int32(4))
    assert int(ntp[0]) == 32 and expert_ids.tolist()[:2] == [0, 1]


def test_nf4_offset_must_be_a_finite_fp32_number():
    e, n, k = 1, 16, 128
    blocks = e * n * k // 64
    packed = torch.zeros(e * n * k // 2, dtype=torch.uint8)
    nested = dict(nested_absmax=torch.zeros(1), nested_code=torch.zeros(256))
    for bad, message in [(float("nan"), "not a finite FP32"), (math.inf, "not a finite FP32"),
                         (1e39, "not a finite FP32"), ("0.1", "must be a number"),
                         (torch.zeros(2), "one-element floating tensor")]:
        with pytest.raises(ValueError, match=message):
            ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks, dtype=torch.uint8), (e, n, k),
                                           offset=bad, **nested)
    with pytest.raises(ValueError, match="CUDA device"):  # a good offset gets as far as packing
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks, dtype=torch.uint8), (e, n, k),
                                       offset=torch.tensor(0.25), **nested)
    assert nf4.fp32_offset(0.1, "x") == torch.tensor(0.1).item()
    assert nf4.fp32_offset(np.float32(0.5), "x") == 0.5 and nf4.fp32_offset(np.int64(2), "x") == 2.0


def test_nf4_quant_state_absmax_dtype_names_its_form():
    packed = torch.zeros(32, dtype=torch.uint8)
    with pytest.raises(ValueError, match="without 'nested_absmax' needs a floating-point"):
        ck.NF4QuantState(packed, torch.tensor([255], dtype=torch.uint8), (1, 1, 64))
    with pytest.raises(ValueError, match="needs a uint8 'absmax'"):
        ck.NF4QuantState(packed, torch.tensor([2.0]), (1, 1, 64), nested_absmax=torch.tensor([0.5]),
                         nested_code=nf4.dynamic_map_signed(), offset=0.0)
    with pytest.raises(ValueError, match="and no nested_code"):
        ck.NF4QuantState(packed, torch.tensor([255], dtype=torch.uint8), (1, 1, 64),
                         nested_absmax=torch.tensor([0.5]), offset=0.0)
    with pytest.raises(TypeError, match="'absmax' must be a torch.Tensor"):
        ck.NF4QuantState(packed, [2.0], (1, 1, 64))
    with pytest.raises(ValueError, match="and no offset"):  # the reference would add 0 to every absmax
        ck.NF4QuantState(packed, torch.tensor([255], dtype=torch.uint8), (1, 1, 64),
                         nested_absmax=torch.tensor([0.5]), nested_code=nf4.dynamic_map_signed())


def test_nf4_state_takes_bitsandbytes_quant_storage_as_its_bytes():
    """Params4bit(quant_storage=torch.bfloat16) (FSDP / QLoRA) holds the same packed bytes in
    bf16 words: read as uint8, not refused."""
    packed = torch.arange(32, dtype=torch.uint8)
    state = nf4._checked_state(packed.view(torch.bfloat16), torch.tensor([2.0]), (1, 1, 64), None, None, None,
                               torch.bfloat16)
    assert state.packed.dtype == torch.uint8 and torch.equal(state.packed, packed)


def test_layer_refuses_scales_of_another_k_before_packing():
    layer = ck.IndexedW4A16Layer(1, 64, 1024)
    with pytest.raises(ValueError, match=r"K = 1024 \(group_size 32\), got \(1, 64, 4\)"):
        layer.load_weight(torch.zeros(1, 64, 128, dtype=torch.int32), torch.ones(1, 64, 4))
    assert layer.tag is None


def test_checkpoint_readers_refuse_malformed_side_tensors():
    with pytest.raises(ValueError, match="'g_idx' must be a torch.Tensor, got list"):
        ck.from_gptq(torch.zeros(1, 32, 64, dtype=torch.int32), torch.ones(1, 8, 64, dtype=torch.float16), None,
                     list(range(256)))
    weight, scale = torch.zeros(1, 64, 32, dtype=torch.int32), torch.ones(1, 64, 8)
    with pytest.raises(ValueError, match="'weight_shape' must be a torch.Tensor, got list"):
        ck.from_compressed_tensors(weight, scale, weight_shape=[64, 256])
    with pytest.raises(ValueError, match=r"'weight_shape' must be integer \[2\] or \[1, 2\]"):
        ck.from_compressed_tensors(weight, scale, weight_shape=torch.tensor([64, 256, 1]))
    with pytest.raises(ValueError, match=r"'weight_shape' must be integer"):
        ck.from_compressed_tensors(weight, scale, weight_shape=torch.tensor([64.4, 256.0]))


def test_operators_trace_in_one_graph_before_any_eager_call():
    """torch.compile(fullgraph=True) traces an operator whose tag no eager call has checked yet
    (a fresh vLLM worker's first forward is the compiled one): the output sizes come from the
    tag's fields while tracing, and the traced op's fake checks the tag."""
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    p = cpu_weight(ck.expected_tag(2, 64, 128))
    _ops._checked_tags.clear()
    compiled = torch.compile(lambda w: ck.dequantize(w), fullgraph=True, backend=record)
    try:
        compiled(p)
    except NotImplementedError as e:  # the traced graph runs the CUDA op on CPU tensors
        assert "CPU" in str(e)
    assert len(graphs) == 1


def test_nf4_quant_state_given_directly_is_checked_like_from_quant_state():
    """NF4Weights(quant_state=...) hands the state's tensors to the GPU pack by pointer: every
    part is checked against the shape first (a short packed or an fp16 absmax would be read out
    of bounds or misread)."""
    e, n, k = 1, 16, 128
    blocks = e * n * k // 64
    good = dict(packed=torch.zeros(e * n * k // 2, dtype=torch.uint8), absmax=torch.zeros(blocks), shape=(e, n, k))
    for change, message in [(dict(packed=torch.zeros(10, dtype=torch.uint8)), "'packed' must have 1024 elements"),
                            (dict(absmax=torch.zeros(blocks, dtype=torch.float16)), "'absmax' must be torch.float32"),
                            (dict(absmax=torch.zeros(1)), "'absmax' must have 32 elements"),
                            (dict(shape=(1, 16, 64.9)), "'shape' must hold integers"),
                            (dict(shape="1,16,128"), "'shape' must be"),
                            (dict(dtype="float16"), "'dtype' must be")]:
        args = dict(good, **change)
        state = object.__new__(ck.NF4QuantState)  # as a caller could build one, bypassing __post_init__
        for field, value in dict(dict(nested_absmax=None, nested_code=None, offset=None, dtype=torch.bfloat16),
                                 **args).items():
            object.__setattr__(state, field, value)
        with pytest.raises(ValueError, match=message):
            ck.NF4Weights(quant_state=state)
    with pytest.raises(TypeError, match="must be an NF4QuantState"):
        ck.NF4Weights(quant_state={"packed": good["packed"]})


def test_nf4_operators_check_the_tag_before_allocating():
    w = object.__new__(ck.NF4Weights)
    w.weight = torch.zeros(64 * 128 // 2, dtype=torch.uint8)
    w.absmax = torch.zeros(64 * 128 // 16, dtype=torch.uint8)
    w.tag = (ck.expected_nf4_tag(1, 64, 128)[:4]) + (2 ** 40, 64, 128)
    w.dtype = torch.bfloat16
    w.quant_state = None
    with pytest.raises(ValueError, match="E=1099511627776"):
        w.dequantize()
    with pytest.raises(ValueError, match="E=1099511627776"):
        ck.nf4_grouped_mm(torch.zeros(4, 128, dtype=torch.bfloat16), torch.zeros(1, dtype=torch.int32), w)


@pytest.mark.parametrize("change, message", [
    (dict(expression="a * b\x00 + garbage ) ("), "NUL"),
    (dict(scatter_idx=torch.zeros(2, 8, dtype=torch.int32)), r"scatter_idx must be \[8, C\]"),
    (dict(scatter_idx=torch.zeros(8, 1, 1, dtype=torch.int32)), r"scatter_idx must be \[8, C\]"),
    (dict(scatter_idx=torch.zeros(0, dtype=torch.int32)), r"scatter_idx must be \[8, C\]"),
    (dict(group_rows=torch.zeros(0, dtype=torch.int32)), r"group_rows must be \[G\] with G >= 1"),
    (dict(group_rows=torch.zeros(3, dtype=torch.int32)), r"group_rows must be \[G\] with G >= 1 dividing"),
    (dict(scatter_idx=torch.zeros(8, dtype=torch.int32), group_rows=torch.ones(2, dtype=torch.int32)),
     "exclusive layouts"),
    (dict(scatter_idx=torch.zeros(8, 1025, dtype=torch.int32)), "1025 columns; at most 1024"),
])
def test_activation_layout_arguments_are_checked(change, message):
    from chord_kernels import activation
    args = dict(inputs=torch.zeros(8, 64, dtype=torch.bfloat16), kind=activation.KINDS["binary_split"],
                expression="a * b", out=torch.zeros(16, 32, dtype=torch.bfloat16), scatter_idx=None, group_rows=None,
                num_valid=None)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        activation._check_args(**args)
    args = dict(args, **{k: None for k in ("scatter_idx", "group_rows")}, expression="a * b")
    activation._check_args(**args)  # the rest was fine


def test_pack_refuses_unpacked_codes_read_as_packed_words(cpu_pack):
    # int32 codes [E, N, K] with group_size 8x too large have the packed form's shape [E, N, K'/8].
    scale = torch.ones(E, N, K // 32, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"only values 0\.\.15: unpacked codes"):
        ck.pack_w4a16(codes(dtype=torch.int32), scale, group_size=256)
    assert not cpu_pack
    ck.pack_w4a16(codes(dtype=torch.int32), scale, group_size=32)  # the right group size packs as codes
    words = torch.randint(-2**31, 2**31 - 1, (E, N, K // 8), dtype=torch.int32)
    ck.pack_w4a16(words, scale)  # real packed words pack
    ck.pack_w4a16(torch.zeros(E, N, K // 8, dtype=torch.int32), scale)  # as a dummy load leaves them
    assert len(cpu_pack) == 3


def test_nf4_keep_state_keeps_the_state_as_given(monkeypatch):
    """keep_state keeps the QuantState as quantize_nf4 (or the caller) made it, its offset a
    tensor; the checked copy that feeds the pack is not what the caller gets back."""
    packed_states = []
    monkeypatch.setattr(ck.NF4Weights, "_pack", lambda self, state, native: packed_states.append(state))
    monkeypatch.setattr(nf4, "_native", lambda library: None)
    given = ck.quantize_nf4(torch.randn(2, 64, 128))
    w = ck.NF4Weights(quant_state=given, keep_state=True)
    assert w.quant_state is given and isinstance(w.quant_state.offset, torch.Tensor)
    (checked,) = packed_states
    assert checked.offset == float(given.offset)  # the pack takes the offset by value
    assert ck.NF4Weights(quant_state=given).quant_state is None


def test_indexed_block_size_must_be_the_routings():
    """The kernel reads block p's expert at expert_ids[p // block_size]: a block_size larger
    than the routing's would run rows on the wrong experts, so the expert id count must be
    exactly the routing's block count."""
    p = cpu_weight(ck.expected_tag(2, 64, 128))
    topk = torch.randint(0, 2, (40, 2), dtype=torch.int32)
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk, 16, 2)
    a = torch.zeros(40, 128, dtype=torch.bfloat16)
    out = torch.zeros(80, 64, dtype=torch.bfloat16)
    for block in (8, 32, 64):
        with pytest.raises(ValueError, match=f"blocks of {block} make .*the block_size the routing was aligned"):
            ck.indexed(a, p, sorted_ids, expert_ids, ntp, 2, out, block_size=block)
    with pytest.raises(ValueError, match="must be on a CUDA device"):  # the routing's block passes every check
        ck.indexed(a, p, sorted_ids, expert_ids, ntp, 2, out, block_size=16)


@pytest.mark.parametrize("top_k, block, message", [(1025, 16, r"top_k must be in 1\.\.1024"),
                                                   (2, 1032, r"multiple of 8 in 8\.\.1024")])
def test_indexed_bounds_match_the_library(top_k, block, message):
    p = cpu_weight(ck.expected_tag(2, 64, 128))
    a = torch.zeros(4, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=message):
        _ops._check_indexed_args(a, p.weight, p.scales, p.tag, torch.zeros(block, dtype=torch.int32),
                                 torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), top_k, block,
                                 torch.zeros(4 * top_k, 64, dtype=torch.bfloat16))


def test_a_tag_checked_as_nf4_is_not_taken_as_int4():
    """The tag cache is per family: an NF4 tag that passed NF4's checks is still refused by the
    INT4 operators, whatever the order of the calls."""
    e, n, k = 1, 64, 128
    w = object.__new__(ck.NF4Weights)
    w.weight = torch.zeros(e * n * k // 2, dtype=torch.uint8)
    w.absmax = torch.zeros(_ops._C.nf4_absmax_bytes(e, n, k), dtype=torch.uint8)
    w.tag = tuple(ck.expected_nf4_tag(e, n, k))
    assert nf4._nf4_dims(w) == (e, n, k)  # cached under NF4
    p = ck.W4A16Weight(w.weight, w.absmax, w.tag)
    with pytest.raises(ValueError, match="is not INT4"):
        ck.dequantize(p)
    with pytest.raises(ValueError, match="is not INT4"):
        _ops._check_offsets_args(torch.zeros(4, k, dtype=torch.bfloat16), w.weight, w.absmax, w.tag,
                                 torch.zeros(e, dtype=torch.int32), torch.zeros(4, n, dtype=torch.bfloat16))


def test_operators_check_the_activation_rank_before_sizing_their_output():
    p = cpu_weight(ck.expected_tag(2, 64, 128))
    one_d = torch.zeros(128, dtype=torch.bfloat16)
    calls = [("a", lambda: ck.contiguous(torch.zeros((), dtype=torch.bfloat16), p, torch.zeros(1, dtype=torch.int32))),
             ("a", lambda: ck.masked(one_d, p, torch.zeros(2, dtype=torch.int32), 1)),
             ("x", lambda: ck.offsets(one_d, p, torch.zeros(2, dtype=torch.int32))),
             ("inputs", lambda: ck.indexed(one_d, p, torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32),
                                           torch.zeros(1, dtype=torch.int32), 2, block_size=16)),
             ("inputs", lambda: ck.moe_activation(torch.zeros((), dtype=torch.bfloat16), "unary", "a"))]
    for name, call in calls:
        with pytest.raises(ValueError, match=f"'{name}' must have . dimensions"):
            call()


@pytest.mark.parametrize("inputs, out, message", [
    ((8, 65), (8, 32), "even number of input columns"),
    ((8, 36), (8, 18), "output width 18 .* multiple of 8"),
    ((8, 64), (4, 32), "out has 4 rows, fewer than the input's 8"),
])
def test_activation_shapes_are_refused_while_tracing_as_the_library_refuses_them(inputs, out, message):
    """The fake of torch.ops.chord.moe_activation runs these checks: a compiled graph is refused
    while traced, not when it first runs."""
    from chord_kernels import activation
    args = dict(inputs=torch.zeros(*inputs, dtype=torch.bfloat16), kind=activation.KINDS["binary_split"],
                expression="a * b", out=torch.zeros(*out, dtype=torch.bfloat16), scatter_idx=None, group_rows=None,
                num_valid=None)
    with pytest.raises(ValueError, match=message):
        activation._check_args(**args)
    with FakeTensorMode() as mode:
        fake = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
        with pytest.raises(ValueError, match=message):
            torch.ops.chord.moe_activation(fake["inputs"], fake["kind"], fake["expression"], fake["out"], None, None,
                                           None)


def test_a_call_on_another_device_than_the_current_one_runs_with_that_device_current(monkeypatch):
    """The library launches in the current CUDA context, so _run_on makes the tensors' device
    current for the call (and only then), as torch's own ops run on their tensors' device."""
    entered = []

    class Guard:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            entered.append(("enter", self.index))

        def __exit__(self, *exc):
            entered.append(("exit", self.index))

    def launch(*args):
        entered.append(("launch", args))
        return "tag"

    monkeypatch.setattr(_ops, "_current_device", lambda: 0)
    monkeypatch.setattr(_ops.torch.cuda, "device", Guard)
    assert _ops._run_on(0, launch, 1, 2) == "tag"
    assert entered == [("launch", (1, 2))]  # already current: no switch
    entered.clear()
    assert _ops._run_on(1, launch, 3) == "tag"
    assert entered == [("enter", 1), ("launch", (3,)), ("exit", 1)]
