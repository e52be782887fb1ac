"""NF4 on the CPU: chord_kernels' torch quantizer (quantize_nf4) and QuantState dequantizer
against the C++ reference (reference/nf4_reference.hpp), bit for bit, through
nf4_reference_tool.cpp compiled here; the argument checks of NF4Weights, from_quant_state
and nf4_grouped_mm (answered before anything touches a GPU); the fake implementation."""
import math
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import torch

import chord_kernels as ck
from chord_kernels import nf4

ROOT = Path(__file__).resolve().parents[2]
TOOL_SOURCES = [ROOT / "tests/python/nf4_reference_tool.cpp", ROOT / "reference/nf4_reference.cpp",
                ROOT / "reference/w4a16_pack.cpp"]


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    missing = [str(p) for p in TOOL_SOURCES if not p.exists()]
    if missing:
        pytest.skip(f"the C++ reference sources are not next to the tests: {missing}")
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the NF4 reference tool (set CXX)")
    exe = tmp_path_factory.mktemp("nf4ref") / "nf4_reference_tool"
    proc = subprocess.run([compiler, "-O2", "-std=c++17", f"-I{ROOT}", *map(str, TOOL_SOURCES), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


def floats_of(bits):
    return struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *bits))


def test_constants_match_reference(tool):
    out = subprocess.run([str(tool), "constants"], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        kind, index, bits = line.split()
        rows.setdefault(kind, []).append(int(bits, 16))
    assert floats_of(rows["table"]) == nf4.NF4_TABLE
    assert floats_of(rows["threshold"]) == nf4.NF4_THRESHOLDS
    ours = nf4.dynamic_map_signed()
    assert ours.dtype == torch.float32 and ours.numel() == 256
    assert ours.view(torch.int32).tolist() == [b - (1 << 32) if b >= 1 << 31 else b for b in rows["code2"]]


def test_dynamic_code_search_matches_reference(tool, tmp_path):
    """The 8-bit absmax code on the values where a search can go wrong: every midpoint
    between neighbouring map entries (FP32, as the search computes it) and its neighbours,
    the entries themselves, the ends and past them, NaN, and random values."""
    code = nf4.dynamic_map_signed()
    mid = (code[:-1] + code[1:]) * 0.5
    up, down = torch.tensor(2.0), torch.tensor(-2.0)
    x = torch.cat([mid, torch.nextafter(mid, up), torch.nextafter(mid, down), code, torch.nextafter(code, up),
                   torch.nextafter(code, down), torch.tensor([1.5, -1.5, float("nan"), 0.0, -0.0]),
                   torch.rand(4000, generator=torch.Generator().manual_seed(2)) * 2 - 1])
    src, dst = tmp_path / "x.bin", tmp_path / "q.bin"
    src.write_bytes(struct.pack(f"<{x.numel()}f", *x.tolist()))
    subprocess.run([str(tool), "dyncode", str(src), str(dst)], check=True)
    ref = torch.frombuffer(bytearray(dst.read_bytes()), dtype=torch.uint8)
    ours = nf4._dynamic_codes(code, x)
    assert torch.equal(ours, ref), (x[ours != ref][:8], ours[ours != ref][:8], ref[ours != ref][:8])
    # The search is not plain nearest-entry: show that these inputs tell the two apart.
    nearest = (x.unsqueeze(1) - code.unsqueeze(0)).abs().argmin(1).to(torch.uint8)
    assert not torch.equal(nearest, ref)


def run_reference(tool, tmp_path, experts, double_quant):
    e, n, k = experts.shape
    code = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2}[experts.dtype]
    raw = experts.contiguous().view(torch.int16 if code < 2 else torch.int32).flatten().tolist()
    fmt = ("<%dh" if code < 2 else "<%di") % len(raw)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(struct.pack("<3q2i", e, n, k, code, int(double_quant)) + struct.pack(fmt, *raw))
    subprocess.run([str(tool), "quantize", str(src), str(dst)], check=True)
    data = bytearray(dst.read_bytes())
    blocks = e * n * k // 64
    pos = 0

    def take(dtype, count):
        nonlocal pos
        size = count * torch.tensor([], dtype=dtype).element_size()
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=pos).clone() if count else torch.empty(0, dtype=dtype)
        pos += size
        return t

    ref = {"nested": bool(take(torch.int32, 1).item()), "offset": take(torch.float32, 1)}
    ref["packed"] = take(torch.uint8, e * n * k // 2)
    if ref["nested"]:
        ref["absmax"] = take(torch.uint8, blocks)
        ref["absmax2"] = take(torch.float32, -(-blocks // 256))
        ref["code2"] = take(torch.float32, 256)
    else:
        ref["absmax"] = take(torch.float32, blocks)
    ref["resolved"] = take(torch.float32, blocks)
    ref["bf16"] = take(torch.int16, e * n * k)
    ref["fp16"] = take(torch.int16, e * n * k)
    assert pos == len(data)
    return ref


def same_bits(a, b):
    """Equal bit patterns (NaN == NaN of the same payload, -0 != +0)."""
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[a.element_size()]
    return torch.equal(a.view(view), b.view(view))


def special_experts(dtype):
    """Random rows at several magnitudes plus blocks that hit every decision boundary: a
    block with absmax 1 holding each threshold and its two FP32 neighbours (FP32 only: the
    16-bit types cannot hold them), an all-zero block, a block of one value, tiny values."""
    gen = torch.Generator().manual_seed(5)
    e, n, k = 3, 48, 192
    x = torch.randn(e, n, k, generator=gen) * torch.logspace(-3, 2, n).view(1, n, 1)
    x[0, 0] = 0.0
    x[0, 1] = 0.25
    x[1, 2, :64] = torch.randn(64, generator=gen) * 1e-30
    if dtype == torch.float32:
        t = torch.tensor(nf4.NF4_THRESHOLDS, dtype=torch.float32)
        vals = torch.cat([t, torch.nextafter(t, torch.tensor(2.0)), torch.nextafter(t, torch.tensor(-2.0))])
        x[2, 3, :45] = vals
        x[2, 3, 45] = 1.0
        x[2, 3, 46:64] = -0.5
        x[2, 4, 64:128] = -x[2, 3, :64]
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("double_quant", [True, False])
def test_quantize_matches_reference(tool, tmp_path, dtype, double_quant):
    experts = special_experts(dtype)
    ref = run_reference(tool, tmp_path, experts, double_quant)
    state = ck.quantize_nf4(experts, double_quant=double_quant)
    assert state.nested == ref["nested"] == double_quant
    assert state.dtype == dtype and state.shape == tuple(experts.shape)
    assert torch.equal(state.packed, ref["packed"])
    if double_quant:
        assert same_bits(state.offset.reshape(1), ref["offset"])
        assert torch.equal(state.absmax, ref["absmax"])
        assert same_bits(state.nested_absmax, ref["absmax2"])
        assert same_bits(state.nested_code, ref["code2"])
    else:
        assert same_bits(state.absmax, ref["absmax"])
    assert same_bits(nf4.resolve_absmax(state), ref["resolved"])
    assert same_bits(ck.dequantize_quant_state(state, torch.bfloat16), ref["bf16"].view(torch.bfloat16).view(
        experts.shape))
    assert same_bits(ck.dequantize_quant_state(state, torch.float16), ref["fp16"].view(torch.float16).view(
        experts.shape))


def test_quantize_many_nested_groups(tool, tmp_path):
    """More than one nested group of 256 blocks with a partial last one, and a block count
    whose FP64 mean is not exact in FP32."""
    gen = torch.Generator().manual_seed(9)
    experts = (torch.randn(5, 64, 320, generator=gen) * 0.02).to(torch.bfloat16)  # 1600 blocks
    ref = run_reference(tool, tmp_path, experts, True)
    state = ck.quantize_nf4(experts)
    assert state.nested_absmax.numel() == 7
    assert torch.equal(state.packed, ref["packed"]) and torch.equal(state.absmax, ref["absmax"])
    assert same_bits(state.nested_absmax, ref["absmax2"]) and same_bits(state.offset.reshape(1), ref["offset"])
    assert same_bits(ck.dequantize_quant_state(state).view(torch.int16).flatten(), ref["bf16"])


def test_quantize_nan_and_inf_match_reference(tool, tmp_path):
    experts = special_experts(torch.float32)
    experts[0, 5, 3] = float("nan")
    experts[0, 6, :64] = float("nan")  # all-NaN block
    experts[1, 7, 70] = float("inf")
    ref = run_reference(tool, tmp_path, experts, False)
    state = ck.quantize_nf4(experts, double_quant=False)
    assert torch.equal(state.packed, ref["packed"])
    assert same_bits(state.absmax, ref["absmax"])


def test_dequantize_quant_state_defines_values():
    """One hand-made block: value = table[code] * absmax, the high nibble first."""
    packed = torch.tensor([0xF0] + [0x77] * 31, dtype=torch.uint8)
    state = ck.NF4QuantState(packed, torch.tensor([2.0]), (1, 1, 64), dtype=torch.float16)
    w = ck.dequantize_quant_state(state)
    assert w.dtype == torch.float16 and w.shape == (1, 1, 64)
    assert w[0, 0, 0].item() == 2.0 and w[0, 0, 1].item() == -2.0 and w[0, 0, 2:].abs().sum().item() == 0
    nested = ck.NF4QuantState(packed, torch.tensor([255], dtype=torch.uint8), (1, 1, 64),
                              nested_absmax=torch.tensor([0.5]), nested_code=nf4.dynamic_map_signed(), offset=1.5)
    assert ck.dequantize_quant_state(nested)[0, 0, 0].item() == 2.0  # code2[255] = 1: 1 * 0.5 + 1.5


def test_quantize_argument_checks():
    with pytest.raises(ValueError, match="multiple of 64"):
        ck.quantize_nf4(torch.zeros(2, 16, 96))
    with pytest.raises(ValueError, match="int32"):
        ck.quantize_nf4(torch.zeros(2, 16, 64, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"\[E, N, K\]"):
        ck.quantize_nf4(torch.zeros(2, 2, 16, 64))
    with pytest.raises(TypeError):
        ck.quantize_nf4([[0.0] * 64])
    with pytest.raises(ValueError, match="CUDA device"):
        ck.NF4Weights(torch.zeros(2, 16, 64, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="exactly one"):
        ck.NF4Weights()


def test_from_quant_state_argument_checks():
    e, n, k = 2, 16, 128
    blocks = e * n * k // 64
    packed = torch.zeros(e * n * k // 2, dtype=torch.uint8)
    with pytest.raises(ValueError, match="'absmax' must be torch.float32"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks, dtype=torch.float16), (e, n, k))
    with pytest.raises(ValueError, match="'packed' must have 2048 elements"):
        ck.NF4Weights.from_quant_state(packed[1:], torch.zeros(blocks), (e, n, k))
    with pytest.raises(ValueError, match="'nested_absmax' must have 1 elements"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks, dtype=torch.uint8), (e, n, k),
                                       nested_absmax=torch.zeros(2), nested_code=torch.zeros(256), offset=0.0)
    with pytest.raises(ValueError, match="'offset' is required"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks, dtype=torch.uint8), (e, n, k),
                                       nested_absmax=torch.zeros(1), nested_code=torch.zeros(256))
    with pytest.raises(ValueError, match="without 'nested_absmax'"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks), (e, n, k), offset=0.5)
    with pytest.raises(ValueError, match="'shape'"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks), (e, n, 100))
    with pytest.raises(ValueError, match="N % 16"):
        ck.NF4Weights.from_quant_state(torch.zeros(8 * 64 // 2, dtype=torch.uint8), torch.zeros(8), (1, 8, 64))
    with pytest.raises(ValueError, match="CUDA device"):
        ck.NF4Weights.from_quant_state(packed, torch.zeros(blocks), (e, n, k))

    class BnbLikeState:  # the attributes a bitsandbytes QuantState carries
        blocksize, quant_type, nested, shape, dtype = 64, "fp4", False, torch.Size([e, n, k]), torch.float16
        absmax = torch.zeros(blocks)

    with pytest.raises(NotImplementedError, match="fp4"):
        ck.NF4Weights.from_quant_state(packed, BnbLikeState())
    BnbLikeState.quant_type, BnbLikeState.blocksize = "nf4", 128
    with pytest.raises(NotImplementedError, match="blocksize 128"):
        ck.NF4Weights.from_quant_state(packed, BnbLikeState())
    BnbLikeState.blocksize = 64
    with pytest.raises(ValueError, match="CUDA device"):  # every check passed: packing needs the GPU
        ck.NF4Weights.from_quant_state(packed, BnbLikeState())


def fake_nf4(e=4, n=64, k=128, dtype=torch.bfloat16):
    """An NF4Weights' metadata on the CPU: enough for every check before the launch."""
    w = object.__new__(ck.NF4Weights)
    w.weight = torch.zeros(e * n * k // 2, dtype=torch.uint8)
    w.absmax = torch.zeros(e * n * k // 16, dtype=torch.uint8)
    w.tag = ck.expected_nf4_tag(e, n, k)
    w.dtype = dtype
    w.quant_state = None
    return w


def test_nf4_grouped_mm_checks_answer_before_launch():
    w = fake_nf4()
    x = torch.zeros(8, 128, dtype=torch.bfloat16)
    offs = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(ValueError, match="'x' must be bfloat16 or float16"):
        ck.nf4_grouped_mm(x.float(), offs, w)
    with pytest.raises(ValueError, match="'x' has K = 64"):
        ck.nf4_grouped_mm(torch.zeros(8, 64, dtype=torch.bfloat16), offs, w)
    with pytest.raises(ValueError, match="'x' must be contiguous"):
        ck.nf4_grouped_mm(torch.zeros(128, 8, dtype=torch.bfloat16).t(), offs, w)
    with pytest.raises(ValueError, match="'x' must have 2 dimensions"):
        ck.nf4_grouped_mm(torch.zeros(2, 4, 128, dtype=torch.bfloat16), offs, w)
    with pytest.raises(ValueError, match="'offsets' must be torch.int32"):
        ck.nf4_grouped_mm(x, offs.long(), w)
    with pytest.raises(ValueError, match="'offsets' has 3 entries"):
        ck.nf4_grouped_mm(x, offs[:3], w)
    with pytest.raises(ValueError, match="'out' must have the dtype of 'x'"):
        ck.nf4_grouped_mm(x, offs, w, torch.zeros(8, 64, dtype=torch.float16))
    with pytest.raises(ValueError, match="'out' must have shape"):
        ck.nf4_grouped_mm(x, offs, w, torch.zeros(8, 32, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="'w' must be NF4Weights"):
        ck.nf4_grouped_mm(x, offs, (w.weight, w.absmax))
    for field, value, message in ((0, 0x1234, "magic"), (1, ck.FORMAT_INT4_G32, "not NF4"),
                                  (2, nf4.NF4_LAYOUT_VERSION + 1, "layout version"), (3, 32, "block size"),
                                  (5, 40, "N % 16")):
        bad = fake_nf4()
        tag = list(bad.tag)
        tag[field] = value
        bad.tag = tuple(tag)
        with pytest.raises(ValueError, match=message):
            ck.nf4_grouped_mm(x, offs, bad)
    short = fake_nf4()
    short.absmax = short.absmax[:-1]
    with pytest.raises(ValueError, match="absmax buffer"):
        ck.nf4_grouped_mm(x, offs, short)
    # FP16 activations pass every check; the last one before the launch is the device.
    with pytest.raises(ValueError, match="CUDA device"):
        ck.nf4_grouped_mm(x.half(), offs, w)
    # The tag is now known (its fields are checked once); its buffers are still checked.
    short_weight = fake_nf4()
    short_weight.weight = short_weight.weight[:-1]
    with pytest.raises(ValueError, match="NF4 weight buffer"):
        ck.nf4_grouped_mm(x, offs, short_weight)
    with pytest.raises(ValueError, match="'dtype' must be bfloat16 or float16"):
        w.dequantize(torch.float32)
    with pytest.raises(ValueError, match="CUDA device"):
        w.dequantize()


def test_nf4_int4_weights_take_the_int4_path():
    from test_cpu import fake_packed  # noqa: E402  (the INT4 metadata helper of the CPU suite)

    p = fake_packed()
    with pytest.raises(ValueError, match="'x' is torch.float16 but the packed weight's format .* takes torch.bfloat16"):
        ck.nf4_grouped_mm(torch.zeros(8, 128, dtype=torch.float16), torch.zeros(4, dtype=torch.int32), p)
    # An fp16 INT4 weight takes fp16 x there too (the last check before the launch is reached).
    with pytest.raises(ValueError, match="CUDA device"):
        ck.nf4_grouped_mm(torch.zeros(8, 128, dtype=torch.float16), torch.zeros(4, dtype=torch.int32),
                          fake_packed(dtype=torch.float16))


def test_library_rejects_nf4_arguments():
    """The library's own checks behind the bindings: an INT4 tag for an NF4 operator, a bad
    dtype code, null pointers, a shape off the tile."""
    int4_tag = ck.expected_tag(1, 64, 64)
    with pytest.raises(ValueError, match="format"):
        nf4._C.nf4_dequantize(int4_tag, 16, 16, 0, 16, 0)
    with pytest.raises(ValueError, match="dtype"):
        nf4._C.nf4_offsets(16, 7, 4, ck.expected_nf4_tag(1, 64, 64), 16, 16, 16, 16, 0)
    with pytest.raises(ValueError, match="null pointer"):
        nf4._C.nf4_pack(0, 16, 0, 0, 0.0, 1, 64, 64, 16, 16, 0)
    with pytest.raises(ValueError, match="nested_code"):
        nf4._C.nf4_pack(16, 16, 0, 16, 0.0, 1, 64, 64, 16, 16, 0)
    with pytest.raises(ValueError, match="K"):
        nf4._C.nf4_pack(16, 16, 0, 0, 0.0, 1, 64, 96, 16, 16, 0)
    assert nf4._C.nf4_weight_bytes(2, 64, 128) == 2 * 64 * 128 // 2
    assert nf4._C.nf4_absmax_bytes(2, 64, 128) == 2 * 64 * 128 // 16


def test_fake_implementation_traces():
    """The fake kernels answer shapes and run the same checks on fake CUDA tensors."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    e, n, k = 4, 64, 128
    with FakeTensorMode(allow_non_fake_inputs=False):
        dev = torch.device("cuda", 0)
        x = torch.empty(10, k, dtype=torch.float16, device=dev)
        weight = torch.empty(e * n * k // 2, dtype=torch.uint8, device=dev)
        absmax = torch.empty(e * n * k // 16, dtype=torch.uint8, device=dev)
        offs = torch.empty(e, dtype=torch.int32, device=dev)
        out = torch.empty(10, n, dtype=torch.float16, device=dev)
        torch.ops.chord.nf4_offsets(x, weight, absmax, ck.expected_nf4_tag(e, n, k), offs, out)
        with pytest.raises(ValueError, match="'out' must have the dtype of 'x'"):
            torch.ops.chord.nf4_offsets(x, weight, absmax, ck.expected_nf4_tag(e, n, k), offs, out.bfloat16())
        full = torch.empty(e, n, k, dtype=torch.bfloat16, device=dev)
        torch.ops.chord.nf4_dequantize(weight, absmax, ck.expected_nf4_tag(e, n, k), 0, full)
        with pytest.raises(ValueError, match="dtype code"):
            torch.ops.chord.nf4_dequantize(weight, absmax, ck.expected_nf4_tag(e, n, k), 1, full)
