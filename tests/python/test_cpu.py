"""CPU subset: the wheel imports, the CLI runs, every argument check answers, the routing
helper and the humming schemas convert. No GPU is touched (argument errors are answered
before any launch)."""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
import torch

import chord_kernels as ck
from chord_kernels import _ops
from humming import dtypes
from humming.config import GemmType, LayerConfig
from humming.schema import BaseInputSchema, BaseWeightSchema, HummingInputSchema, HummingWeightSchema
from humming.transform import prepare_and_transform_humming_tensors
from humming.tune import get_heuristics_config
from humming.utils.weight import dequantize_weight, pack_int4, quantize_weight, unpack_int4

CT_CONFIG = {
    "quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int", "num_bits": 4,
    "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False, "actorder": None,
    "observer": "minmax",
}


def test_native_module_and_ops_registered():
    assert ck.LAYOUT_VERSION == 1
    assert ck.__version__.count(".") == 2
    assert ck.contiguous_alignment() > 0
    written = {"w4a16_pack": {"weight_out", "scales_out"}, "nf4_offsets": {"out"}, "nf4_dequantize": {"out"}}
    for name in ("w4a16_indexed", "w4a16_contiguous", "w4a16_masked", "w4a16_offsets", "w4a16_dequantize",
                 "w4a16_pack", "nf4_offsets", "nf4_dequantize"):
        assert hasattr(torch.ops.chord, name), name
        # The schema marks exactly the tensors the op writes, so torch.compile functionalizes them.
        args = getattr(torch.ops.chord, name).default._schema.arguments
        assert {a.name for a in args if a.alias_info is not None and a.alias_info.is_write} == \
            written.get(name, {"out"}), name


def test_op_registration_compiles_fullgraph():
    """The registration every chord op uses (_ops._define_op: a schema, the device launch, a
    fake), here on a CPU op: torch.compile(fullgraph=True) traces through it, functionalizes
    the written output and gives the eager result; the fake's checks run while tracing."""
    lib = torch.library.Library("chord_test", "FRAGMENT")

    def launch(a, tag, k, out):
        out.copy_(a * k + tag[0])

    def fake(a, tag, k, out):
        if a.shape != out.shape:
            raise ValueError("'out' must have the shape of 'a'")

    _ops._define_op("scale_into(Tensor a, SymInt[] tag, SymInt k, Tensor(a!) out) -> ()", launch, fake, lib=lib,
                    device="CPU")

    def f(a, out_rows):
        out = torch.empty(out_rows, a.shape[1])
        torch.ops.chord_test.scale_into(a, [1, 2], 3, out)
        return out * 2

    a = torch.randn(4, 8)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=False)
    assert torch.equal(compiled(a, 4), f(a, 4))
    assert torch.equal(compiled(a, 4), (a * 3 + 1) * 2)
    with pytest.raises(Exception, match="must have the shape"):
        torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=False)(a, 3)


def run_fresh(args):
    """Runs a command in a fresh process; a failure names the command, the exit status or
    signal, and the end of its stderr."""
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        status = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                  else f"exit status {proc.returncode}")
        pytest.fail(f"{' '.join(args)}: {status}\n{proc.stderr[-3000:]}")
    return proc.stdout


def test_cli_runs():
    # This process imported torch before chord_kernels, which hides clashes between the
    # wheel's libraries and torch's (a C++ runtime linked statically into libchord once made
    # `import torch` abort with free(): invalid pointer). The CLI and most scripts import
    # chord_kernels first: check that order in a fresh process, then the CLI itself.
    out = run_fresh([sys.executable, "-c",
                     "import chord_kernels, torch; print(chord_kernels.__version__, torch.ones(2).sum().item())"])
    assert out.split() == [ck.__version__, "2.0"]

    out = run_fresh([sys.executable, "-m", "chord_kernels_cli", "info"])
    assert "chord " + ck.__version__ in out
    assert "NVRTC 13." in out
    if torch.cuda.is_available():  # the CLI finds the driver and the same GPUs as torch
        assert out.count("compute capability") == torch.cuda.device_count(), out

    script = console_script()
    if script is not None:
        assert "chord " + ck.__version__ in run_fresh([script, "info"])


def console_script():
    """The `chord` console script: next to the interpreter in a virtual environment, else on PATH."""
    script = os.path.join(os.path.dirname(sys.executable), "chord")
    return script if os.path.exists(script) else shutil.which("chord")


def test_cli_starts_without_torch():
    """`chord` runs the bundled binary without importing torch, NumPy or chord_kernels (whose
    __init__ imports torch): -X importtime lists every module the Python side imported before
    it handed over to the binary."""
    commands = [[sys.executable, "-X", "importtime", "-m", "chord_kernels_cli", "--help"]]
    if console_script() is not None:
        commands.append([console_script(), "--help"])
    for command in commands:
        proc = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONPROFILEIMPORTTIME="1"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "usage: chord <command> [options]" in proc.stdout  # the binary answered
        imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:") and "|" in line}
        assert "chord_kernels_cli" in imported, proc.stderr[-3000:]  # the import log was read
        heavy = {name for name in imported if name.split(".")[0] in ("torch", "numpy", "chord_kernels")}
        assert not heavy, f"{' '.join(command)} imported {sorted(heavy)}"


def test_library_checks_tag_and_pointers():
    bad_magic = (ck.MAGIC ^ 1,) + ck.expected_tag(1, 64, 64)[1:]
    with pytest.raises(ValueError, match="magic"):
        _ops._C.contiguous(16, 4, bad_magic, 16, 16, 16, 16, 0)
    old_layout = ck.expected_tag(1, 64, 64)[:2] + (ck.LAYOUT_VERSION + 1,) + ck.expected_tag(1, 64, 64)[3:]
    with pytest.raises(ValueError, match="layout version"):
        _ops._C.indexed(16, 4, old_layout, 16, 16, 16, 64, 16, 16, 1, 16, 16, 0)
    with pytest.raises(ValueError, match="null pointer"):
        _ops._C.offsets(0, 4, ck.expected_tag(1, 64, 64), 16, 16, 16, 16, 0)
    with pytest.raises(ValueError, match="out of range"):
        _ops._C.dequantize((-1, 1, 1, 32, 1, 64, 64), 16, 16, 16, 0)


def fake_packed(e=4, n=64, k=128, dtype=torch.bfloat16):
    """A packed weight's metadata on the CPU: enough for every check before the launch."""
    w = torch.zeros(_ops._C.weight_bytes(e, n, k), dtype=torch.uint8)
    s = torch.zeros(_ops._C.scale_bytes(e, n, k), dtype=torch.uint8)
    return ck.W4A16Weight(w, s, ck.expected_tag(e, n, k, dtype))


def test_python_checks_answer_before_launch():
    p = fake_packed()
    a = torch.zeros(8, 128, dtype=torch.bfloat16)
    idx = torch.zeros(8, dtype=torch.int32)
    with pytest.raises(ValueError, match="bfloat16"):
        ck.contiguous(a.float(), p, idx)
    with pytest.raises(ValueError, match="K = 64"):
        ck.contiguous(torch.zeros(8, 64, dtype=torch.bfloat16), p, idx)
    with pytest.raises(ValueError, match="m_indices"):
        ck.contiguous(a, p, idx.long())
    with pytest.raises(ValueError, match="shape"):
        ck.contiguous(a, p, idx, torch.zeros(8, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="contiguous"):
        ck.offsets(torch.zeros(128, 8, dtype=torch.bfloat16).t(), p, torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="offsets"):
        ck.grouped_mm(a, torch.zeros(3, dtype=torch.int32), p)
    with pytest.raises(ValueError, match="groups"):
        ck.masked(torch.zeros(5, 4, 128, dtype=torch.bfloat16), p, torch.zeros(5, dtype=torch.int32), 4)
    ids = torch.zeros(64, dtype=torch.int32)
    ntp = torch.zeros(1, dtype=torch.int32)
    with pytest.raises(ValueError, match="block_size"):
        ck.indexed(a, p, ids, torch.zeros(8, dtype=torch.int32), ntp, 2, block_size=12)
    with pytest.raises(ValueError, match="expert_ids"):
        ck.indexed(a, p, ids, torch.zeros(3, dtype=torch.int32), ntp, 2, block_size=16)
    with pytest.raises(ValueError, match="outputs"):
        ck.indexed(a, p, ids, torch.zeros(4, dtype=torch.int32), ntp, 2, torch.zeros(8, 64, dtype=torch.bfloat16),
                   block_size=16)
    # everything right but the device: the last check before the launch
    with pytest.raises(ValueError, match="CUDA device"):
        ck.indexed(a, p, ids, torch.zeros(4, dtype=torch.int32), ntp, 2, block_size=16)
    with pytest.raises(TypeError):
        ck.dequantize((p.weight, p.scales))


def test_tag_checks():
    p = fake_packed()
    a = torch.zeros(8, 128, dtype=torch.bfloat16)
    idx = torch.zeros(8, dtype=torch.int32)
    for field, value, message in ((0, 0x1234, "magic"), (1, 10, "format"), (2, ck.LAYOUT_VERSION + 1, "layout version"),
                                  (3, 64, "group size"), (5, 40, "N % 16")):
        tag = list(p.tag)
        tag[field] = value
        with pytest.raises(ValueError, match=message):
            ck.contiguous(a, ck.W4A16Weight(p.weight, p.scales, tuple(tag)), idx)
    # A tag already seen (its fields are checked once and cached) still has its buffers
    # checked on every call, whether it comes as a tuple or a list.
    with pytest.raises(ValueError, match="CUDA device"):
        ck.contiguous(a, p, idx)
    short = ck.W4A16Weight(p.weight[:-1], p.scales, p.tag)
    with pytest.raises(ValueError, match="packed weight buffer .* bytes"):
        ck.contiguous(a, short, idx)
    with pytest.raises(ValueError, match="packed scales buffer .* bytes"):
        ck.contiguous(a, ck.W4A16Weight(p.weight, p.scales[:-1], list(p.tag)), idx)


def test_pack_argument_checks():
    scale = torch.ones(2, 64, 4, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="cannot infer"):
        ck.pack_w4a16(torch.zeros(2, 64, 100, dtype=torch.uint8), scale)
    with pytest.raises(ValueError, match="int32"):
        ck.pack_w4a16(torch.zeros(2, 64, 16, dtype=torch.int16), scale)
    with pytest.raises(ValueError, match="unknown mode"):
        ck.pack_w4a16_grouped(torch.zeros(2, 64, 128, dtype=torch.uint8), scale, mode="ragged")
    with pytest.raises(ValueError, match="scale"):
        ck.pack_w4a16(torch.zeros(2, 64, 128, dtype=torch.uint8), torch.ones(2, 32, 4))
    with pytest.raises(ValueError, match="block_policy 'fast'"):
        ck.IndexedW4A16Layer(4, 64, 128, block_policy="fast")
    with pytest.warns(DeprecationWarning, match="block_policy"):
        assert ck.IndexedW4A16Layer(4, 64, 128, profile="decode").block_size(10 ** 6) == 16
    with pytest.raises(ValueError, match="block_policy 'fast'"), pytest.warns(DeprecationWarning):
        ck.IndexedW4A16Layer(4, 64, 128, profile="fast")


def test_pack_group_size_checks():
    codes = torch.zeros(2, 64, 256, dtype=torch.uint8)
    for bad in (0, -128, 48, 16, True, 128.0, "128"):
        with pytest.raises(ValueError, match="group_size"):
            ck.pack_w4a16(codes, torch.ones(2, 64, 2), group_size=bad)
    # The scales' last dimension and the group size give K: 2 scales of 128 -> K 256.
    with pytest.raises(ValueError, match=r"neither K = 512"):
        ck.pack_w4a16(codes, torch.ones(2, 64, 4), group_size=128)
    with pytest.raises(ValueError, match=r"one scale per 128 weights"):
        ck.pack_w4a16(codes, torch.ones(2, 32, 2), group_size=128)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group_size", [32, 64, 128, 256])
def test_coarser_group_scales_expand_exactly(group_size, dtype):
    """The layout's 32-wide groups (128-wide for a multiple of 128: the group-128 formats)
    repeat a coarser group's scale: each weight's scale is the one of its own group, so
    dtype((code - 8) * scale) is unchanged. Scales already in dtype (fp16 GPTQ / AWQ scales
    with dtype=float16) are copied bit for bit."""
    from chord_kernels import _ops
    e, n, k = 2, 16, 256
    packed = _ops.packed_group(group_size, k)
    assert packed == (128 if group_size % 128 == 0 else 32)
    gen = torch.Generator().manual_seed(group_size)
    scale = torch.rand(e, n, k // group_size, generator=gen, dtype=torch.float32) + 0.5
    got = _ops._as_packed_scales(scale, e, n, k, group_size, dtype, packed)
    assert got.dtype == dtype and tuple(got.shape) == (e, n, k // packed)
    for kk in range(0, k, packed):
        assert torch.equal(got[..., kk // packed], scale[..., kk // group_size].to(dtype))
    same = scale.to(dtype)
    got = _ops._as_packed_scales(same, e, n, k, group_size, dtype, packed)
    for kk in range(0, k, packed):
        assert torch.equal(got[..., kk // packed].view(torch.int16), same[..., kk // group_size].view(torch.int16))
    zp = torch.randint(0, 16, (e, n, k // group_size), generator=gen, dtype=torch.int32)
    zps = _ops._as_packed_zero_points(zp, e, n, k, group_size, torch.device("cpu"), packed)
    assert zps.dtype == torch.uint8 and tuple(zps.shape) == (e, n, k // packed)
    assert torch.equal(zps.long(), zp.long().repeat_interleave(group_size // packed, -1))


def test_group_128_formats_tags_and_sizes():
    """Group 128 (a multiple of 128 with K % 128 == 0) packs into the CHORD_FORMAT_INT4_G128*
    formats: tag group_size 128, a quarter of group 32's scale bytes; group 64, and channel-wise
    groups with K % 128 != 0, stay group-32 formats. Every operator's checks take the new tags."""
    assert (ck.FORMAT_INT4_G128, ck.FORMAT_INT4_G128_FP16, ck.FORMAT_INT4_G128_ZP, ck.FORMAT_INT4_G128_ZP_FP16) == \
        (6, 7, 8, 9)
    assert _ops.SRC_GROUP_128 == 0x20
    assert _ops.packed_group(128, 256) == _ops.packed_group(256, 256) == _ops.packed_group(512, 512) == 128
    assert _ops.packed_group(64, 256) == _ops.packed_group(32, 256) == 32
    assert _ops.packed_group(192, 192) == 32  # channel-wise, K % 128 != 0: repeated per 32
    want = {(torch.bfloat16, False): ck.FORMAT_INT4_G128, (torch.float16, False): ck.FORMAT_INT4_G128_FP16,
            (torch.bfloat16, True): ck.FORMAT_INT4_G128_ZP, (torch.float16, True): ck.FORMAT_INT4_G128_ZP_FP16}
    for (dt, zp), fmt in want.items():
        tag = ck.expected_tag(4, 64, 256, dt, zero_point=zp, group_size=128)
        assert tag[1] == fmt and tag[3] == 128
        assert ck.expected_tag(4, 64, 256, dt, zero_point=zp, group_size=64)[3] == 32
        entry = 4 if zp else 2
        assert _ops._C.format_scale_bytes(fmt, 4, 64, 256) == 4 * 64 * 2 * entry
        assert _ops._C.format_scale_bytes(fmt, 4, 64, 192) == -1
        w = torch.zeros(_ops._C.weight_bytes(4, 64, 256), dtype=torch.uint8)
        s = torch.zeros(4 * 64 * 2 * entry, dtype=torch.uint8)
        p = ck.W4A16Weight(w, s, tag)
        assert p.group_size == 128 and p.dtype == dt and p.has_zero_point == zp
        # The checks before the launch take the tag (the next failure is the device's).
        a = torch.zeros(8, 256, dtype=dt)
        with pytest.raises(ValueError, match="CUDA device"):
            ck.offsets(a, p, torch.zeros(4, dtype=torch.int32))
        with pytest.raises(ValueError, match="CUDA device"):
            ck.dequantize(p)
        # The scales buffer of group 32's size is refused, and so is a wrong group field.
        big = ck.W4A16Weight(w, torch.zeros(4 * 64 * 8 * entry, dtype=torch.uint8), tag)
        with pytest.raises(ValueError, match="packed scales buffer"):
            ck.offsets(a, big, torch.zeros(4, dtype=torch.int32))
        bad = ck.W4A16Weight(w, s, tag[:3] + (32,) + tag[4:])
        with pytest.raises(ValueError, match="group size 32; supported: 128"):
            ck.offsets(a, bad, torch.zeros(4, dtype=torch.int32))
    # pack_w4a16 with group 128 reaches the device check with the group-128 scales.
    with pytest.raises(ValueError, match="CUDA device"):
        ck.pack_w4a16(torch.zeros(1, 64, 256, dtype=torch.uint8), torch.ones(1, 64, 2), group_size=128)


def test_fp16_format_tag_and_dtype():
    p16, p = fake_packed(dtype=torch.float16), fake_packed()
    assert p16.tag[1] == ck.FORMAT_INT4_G32_FP16 != ck.FORMAT_INT4_G32 == p.tag[1]
    assert p16.dtype == torch.float16 and p.dtype == torch.bfloat16
    assert ck.expected_tag(1, 16, 64) == ck.expected_tag(1, 16, 64, torch.bfloat16)
    for bad in (torch.float32, torch.int8, "float16"):
        with pytest.raises(ValueError, match="'dtype' must be torch.bfloat16 or torch.float16"):
            ck.expected_tag(1, 16, 64, bad)
        with pytest.raises(ValueError, match="'dtype'"):
            ck.pack_w4a16(torch.zeros(1, 16, 64, dtype=torch.uint8), torch.ones(1, 16, 2), dtype=bad)


@pytest.mark.parametrize("weight_dtype", [torch.bfloat16, torch.float16])
def test_activation_dtype_must_match_the_weight_format(weight_dtype):
    """A bf16 weight with fp16 activations (or the reverse) is an error naming the fix, in every
    mode, never a launch; the matching dtype reaches the last check before the launch."""
    other = torch.float16 if weight_dtype == torch.bfloat16 else torch.bfloat16
    p = fake_packed(dtype=weight_dtype)
    idx = torch.zeros(8, dtype=torch.int32)
    ids, ntp = torch.zeros(64, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    calls = {
        "contiguous": lambda dt, out=None: ck.contiguous(torch.zeros(8, 128, dtype=dt), p, idx, out),
        "masked": lambda dt, out=None: ck.masked(torch.zeros(4, 2, 128, dtype=dt), p, torch.zeros(4, dtype=torch.int32),
                                                 2, out),
        "offsets": lambda dt, out=None: ck.offsets(torch.zeros(8, 128, dtype=dt), p, torch.zeros(4, dtype=torch.int32),
                                                   out),
        "grouped_mm": lambda dt, out=None: ck.grouped_mm(torch.zeros(8, 128, dtype=dt),
                                                         torch.zeros(4, dtype=torch.int32), p, out),
        "indexed": lambda dt, out=None: ck.indexed(torch.zeros(8, 128, dtype=dt), p, ids,
                                                   torch.zeros(4, dtype=torch.int32), ntp, 2, out, block_size=16),
    }
    out_shapes = {"contiguous": (8, 64), "masked": (4, 2, 64), "offsets": (8, 64), "grouped_mm": (8, 64),
                  "indexed": (16, 64)}
    for name, call in calls.items():
        with pytest.raises(ValueError, match=rf"is {other} but the packed weight's format .* takes {weight_dtype}"):
            call(other)
        with pytest.raises(ValueError, match=rf"must be {weight_dtype}"):
            call(weight_dtype, torch.zeros(out_shapes[name], dtype=other))
        with pytest.raises(ValueError, match="CUDA device"):
            call(weight_dtype)
    with pytest.raises(ValueError, match="CUDA device"):
        ck.dequantize(p)


def test_fake_impls_follow_the_weight_format():
    """torch.compile traces the ops through their fake implementations: with an fp16 weight
    they take fp16 activations and outputs, and refuse bf16 ones."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    p16 = fake_packed(dtype=torch.float16)
    tag = list(p16.tag)
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.empty(8, 128, dtype=torch.float16)
        offs = torch.empty(4, dtype=torch.int32)
        torch.ops.chord.w4a16_offsets(x, p16.weight, p16.scales, tag, offs, torch.empty(8, 64, dtype=torch.float16))
        torch.ops.chord.w4a16_dequantize(p16.weight, p16.scales, tag, torch.empty(4, 64, 128, dtype=torch.float16))
        with pytest.raises(ValueError, match="must be torch.float16"):
            torch.ops.chord.w4a16_offsets(x, p16.weight, p16.scales, tag, offs,
                                          torch.empty(8, 64, dtype=torch.bfloat16))
        with pytest.raises(ValueError, match="torch.bfloat16 but the packed weight's format"):
            torch.ops.chord.w4a16_offsets(x.to(torch.bfloat16), p16.weight, p16.scales, tag, offs,
                                          torch.empty(8, 64, dtype=torch.float16))


def reference_alignment(topk_ids, block, num_experts, expert_map):
    flat = topk_ids.flatten().tolist()
    segments = []
    for e in range(num_experts):
        routes = [i for i, g in enumerate(flat) if (expert_map[g] if expert_map is not None else g) == e]
        segments.append(routes)
    return segments


@pytest.mark.parametrize("use_map,tokens", [(False, 37), (True, 37), (False, 1), (True, 1)])
def test_moe_align_block_size(use_map, tokens):
    gen = torch.Generator().manual_seed(3 + tokens)
    top_k, global_experts, block = 4, 12, 16
    topk_ids = torch.stack([torch.randperm(global_experts, generator=gen)[:top_k] for _ in range(tokens)]).int()
    expert_map = None
    local = global_experts
    if use_map:
        local = 6
        expert_map = torch.full((global_experts,), -1, dtype=torch.int32)
        expert_map[3:9] = torch.arange(6, dtype=torch.int32)
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, block, local, expert_map)
    assert sorted_ids.dtype == expert_ids.dtype == ntp.dtype == torch.int32
    assert sorted_ids.numel() == ck.routing_capacity(tokens * top_k, local, block)
    assert expert_ids.numel() * block == sorted_ids.numel()
    segments = reference_alignment(topk_ids, block, local, expert_map)
    pos = 0
    for e, routes in enumerate(segments):
        padded = -(-len(routes) // block) * block
        seg = sorted_ids[pos:pos + padded].tolist()
        assert seg[:len(routes)] == routes, e  # stable: token order inside an expert
        assert all(x == tokens * top_k for x in seg[len(routes):])
        assert all(x == e for x in expert_ids[pos // block:(pos + padded) // block].tolist())
        pos += padded
    assert int(ntp[0]) == pos <= sorted_ids.numel()
    assert all(x == tokens * top_k for x in sorted_ids[pos:].tolist())
    assert all(x == -1 for x in expert_ids[pos // block:].tolist())


@pytest.mark.parametrize("use_map", [False, True])
def test_moe_align_block_size_drops_invalid_ids(use_map):
    """Padding rows (every id -1) and ids past the experts are dropped, as vLLM's op does
    with ignore_invalid_experts: the alignment equals that of the valid routes alone, with
    the route indices of the full tensor. A wrapped -1 would land on the last expert."""
    top_k, global_experts, block, tokens = 4, 12, 16, 9
    gen = torch.Generator().manual_seed(5)
    topk_ids = torch.stack([torch.randperm(global_experts, generator=gen)[:top_k] for _ in range(tokens)]).int()
    topk_ids[2] = -1                   # a padding row
    topk_ids[5, 1] = global_experts + 3  # past the global experts
    topk_ids[6, 3] = -7
    local, expert_map = global_experts, None
    if use_map:
        local = 6
        expert_map = torch.full((global_experts,), -1, dtype=torch.int32)
        expert_map[6:12] = torch.arange(6, dtype=torch.int32)  # the last expert is local
    sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, block, local, expert_map)
    clean = topk_ids.clone()
    invalid = (clean < 0) | (clean >= global_experts)
    clean[invalid] = 0  # expert 0: off this rank under the map, else counted below
    segments = reference_alignment(clean, block, local, expert_map)
    dropped = set(torch.nonzero(invalid.flatten()).flatten().tolist())
    assert dropped
    pos = 0
    for e, routes in enumerate(segments):
        routes = [r for r in routes if r not in dropped]
        padded = -(-len(routes) // block) * block
        seg = sorted_ids[pos:pos + padded].tolist()
        assert seg[:len(routes)] == routes, e
        assert all(x == tokens * top_k for x in seg[len(routes):])
        assert all(x == e for x in expert_ids[pos // block:(pos + padded) // block].tolist())
        pos += padded
    assert int(ntp[0]) == pos
    assert not dropped & set(sorted_ids.tolist())


def test_routing_capacity_bounds_every_alignment():
    # Fewer routes than experts: each route's block at most (vLLM's cap); else the slack bound.
    assert ck.routing_capacity(8, 48, 16) == 128
    assert ck.routing_capacity(4, 12, 16) == 64
    assert ck.routing_capacity(148, 12, 16) == 336  # 148 + 12 * 15 = 328, a block multiple up
    assert ck.routing_capacity(0, 12, 16) == 0
    # No alignment of any draw pads past it: the worst draw puts every route on its own expert
    # (rows per expert 1: a whole block each) or spreads them so every expert wastes 15 slots.
    gen = torch.Generator().manual_seed(11)
    for routes_per_token, tokens, experts, block in ((8, 1, 48, 16), (4, 3, 12, 16), (8, 20, 32, 32), (2, 5, 64, 8)):
        for _ in range(20):
            topk_ids = torch.stack([torch.randperm(experts, generator=gen)[:routes_per_token]
                                    for _ in range(tokens)]).int()
            sorted_ids, _, ntp = ck.moe_align_block_size(topk_ids, block, experts)
            assert int(ntp[0]) <= sorted_ids.numel() == ck.routing_capacity(tokens * routes_per_token, experts, block)


def test_block_size_profiles():
    assert ck.block_size_for_rows(2, "auto") == 16
    assert ck.block_size_for_rows(20, "auto") == 32
    assert ck.block_size_for_rows(500, "auto") == 64
    assert ck.block_size_for_rows(500, "decode") == 16
    assert ck.block_size_for_rows(1, "prefill") == 64


# -- humming facade --------------------------------------------------------------------------

def test_dtypes():
    assert dtypes.DataType.from_torch_dtype(torch.bfloat16) == dtypes.bfloat16
    assert dtypes.DataType.from_str("uint4") == dtypes.uint4 and dtypes.uint4.num_bits == 4
    assert not dtypes.uint4.is_signed and dtypes.int4.is_signed
    assert dtypes.float8e4m3.num_bits == 8 and dtypes.int8.num_bits == 8 and dtypes.float16.num_bits == 16
    assert dtypes.torch_dtype_map[dtypes.bfloat16] is torch.bfloat16
    assert {dtypes.bfloat16: 1}[dtypes.DataType.from_str("bfloat16")] == 1
    assert str(dtypes.DataType.from_torch_dtype(torch.float8_e4m3fn)) == "float8e4m3"


def test_pack_int4_order():
    codes = torch.arange(16, dtype=torch.int32).repeat(2).reshape(1, 32)
    words = pack_int4(codes)
    assert words.dtype == torch.int32 and words.shape == (1, 4)
    assert int(words[0, 0]) == 0x76543210
    assert int(words[0, 1]) & 0xFFFFFFFF == 0xFEDCBA98
    assert torch.equal(unpack_int4(words), codes)


def test_quantize_round_trip():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(3, 64, 128, generator=gen)
    codes, scale, zp, gs = quantize_weight(w, dtypes.uint4, dtypes.bfloat16, 32, pack=True)
    assert zp is None and gs is None
    assert codes.shape == (3, 64, 16) and codes.dtype == torch.int32
    assert scale.shape == (3, 64, 4) and scale.dtype == torch.bfloat16
    back = dequantize_weight(codes, scale, packed=True)
    step = scale.float().repeat_interleave(32, -1)
    assert ((back - w).abs() <= step * 0.5 + 1e-6).all()
    for group, columns in ((128, 1), (64, 2), (0, 1), (-1, 1)):  # 0 / -1: one scale per row
        codes, scale, _, _ = quantize_weight(w, dtypes.uint4, dtypes.bfloat16, group)
        assert scale.shape == (3, 64, columns)
        back = dequantize_weight(codes, scale)
        assert ((back - w).abs() <= scale.float().repeat_interleave(128 // columns, -1) * 0.5 + 1e-6).all()
    for group in (48, 256, 16):  # not a multiple of 32, larger than K, finer than the layout
        with pytest.raises(NotImplementedError, match=f"group size {group}"):
            quantize_weight(w, dtypes.uint4, dtypes.bfloat16, group)
    with pytest.raises(NotImplementedError, match="zero point"):
        quantize_weight(w, dtypes.uint4, dtypes.bfloat16, 32, has_zero_point=True)


def test_weight_schema_from_config():
    schema = BaseWeightSchema.from_config(CT_CONFIG)
    attrs = schema.get_tensors_attrs(shape_n=256, shape_k=512, param_dtype=torch.bfloat16, num_experts=8)
    assert attrs["weight_packed"]["shape"] == (8, 256, 64) and attrs["weight_packed"]["dtype"] == torch.int32
    assert attrs["weight_scale"]["shape"] == (8, 256, 16)
    assert attrs["weight_packed"]["extra_attrs"]["input_dim"] == 2
    h = BaseWeightSchema.from_config({"quant_method": "humming", "dtype": "int4", "group_size": 32})
    assert isinstance(h, HummingWeightSchema) and h.b_dtype == dtypes.uint4
    assert BaseInputSchema.from_config({"quant_method": "humming"}).get_activation_bits() == 16


@pytest.mark.parametrize("change,named", [
    ({"format": "int-quantized"}, "format 'int-quantized'"),
    ({"num_bits": 8}, "int8 weights"),
    ({"group_size": 48}, "group_size 48"),
    ({"group_size": 16}, "group_size 16"),
    ({"strategy": "tensor"}, "strategy 'tensor'"),
    ({"strategy": "block"}, "strategy 'block'"),
    ({"actorder": "group"}, "actorder 'group'"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 100}, "GPTQ group_size 100"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 0}, "GPTQ group_size 0"),
    ({"quant_method": "gptq", "bits": 4, "sym": False, "desc_act": True}, "GPTQ desc_act"),
    ({"quant_method": "gptq", "bits": 4, "format": "marlin"}, "GPTQ format 'marlin'"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}, "AWQ zero_point: false"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"}, "AWQ version 'gemv'"),
    ({"quant_method": "fp8"}, "FP8 weights"),
    ({"quant_method": "mxfp4"}, "MXFP4 weights"),
    ({"quant_method": "quark"}, "weight quant_method 'quark'"),
])
def test_unsupported_schemes_are_named(change, named):
    with pytest.raises(NotImplementedError, match=named):
        BaseWeightSchema.from_config({**CT_CONFIG, **change})


def test_unsupported_humming_and_input_schemes():
    with pytest.raises(NotImplementedError, match="float8e4m3"):
        HummingWeightSchema(b_dtype="float8e4m3", weight_scale_group_size=32)
    with pytest.raises(NotImplementedError, match="group size 100"):
        HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=100)
    assert HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=128).group_size == 128
    assert HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=0).group_size == 0  # channel-wise
    with pytest.raises(NotImplementedError, match="floating-point weight zero point"):
        HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32, has_zero_point=True, is_fp_zero_point=True)
    with pytest.raises(NotImplementedError, match="activation type float8e4m3"):
        HummingInputSchema(a_dtype="float8e4m3")
    with pytest.raises(NotImplementedError, match="quantized activations"):
        BaseInputSchema.from_config({"quant_method": "compressed-tensors", "type": "float", "num_bits": 8,
                                     "dynamic": True, "group_size": None, "format": "float-quantized"})
    with pytest.raises(NotImplementedError, match="bias"):
        HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32).get_tensors_attrs(
            64, 128, torch.bfloat16, has_bias=True)


def test_convert_compressed_tensors():
    gen = torch.Generator().manual_seed(2)
    e, n, k = 4, 64, 128
    w = torch.randn(e, n, k, generator=gen)
    codes, scale, _, _ = quantize_weight(w, dtypes.uint4, dtypes.bfloat16, 32, pack=True)
    schema = BaseWeightSchema.from_config(CT_CONFIG)
    tensors = {"weight_packed": codes, "weight_scale": scale.float(), "weight_shape": torch.tensor([n, k])}
    humming_schema, out = schema.convert_humming(tensors, [n // 2, n // 2], [k], torch.bfloat16, num_experts=e)
    assert isinstance(humming_schema, HummingWeightSchema)
    assert humming_schema.b_dtype == dtypes.uint4 and humming_schema.weight_scale_group_size == 32
    assert out["weight"] is codes and out["weight_scale"].dtype == torch.bfloat16
    humming_schema.validate_tensors(out, n, k, torch.bfloat16, num_experts=e)
    humming16, out16 = schema.convert_humming(tensors, [n], [k], torch.float16, num_experts=e)
    assert humming16 == humming_schema and out16["weight_scale"].dtype == torch.float16
    humming16.validate_tensors(out16, n, k, torch.float16, num_experts=e)
    with pytest.raises(NotImplementedError, match="model dtype torch.float32"):
        schema.convert_humming(tensors, [n], [k], torch.float32, num_experts=e)
    with pytest.raises(ValueError, match="shapes"):
        schema.convert_humming(tensors, [n], [k * 2], torch.bfloat16, num_experts=e)


def gptq_g32_layer(seed, e=2, n=64, k=128):
    """A symmetric GPTQ g32 layer as vLLM hands it over: (codes N-first, scales, the schema,
    the tensors qweight [E, K/8, N] and scales [E, K/32, N])."""
    gen = torch.Generator().manual_seed(seed)
    codes, scale, _, _ = quantize_weight(torch.randn(e, n, k, generator=gen), dtypes.uint4, dtypes.bfloat16, 32,
                                         pack=True)
    schema = BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": True,
                                           "desc_act": False})
    return codes, scale, schema, {"qweight": codes.transpose(1, 2).contiguous(), "scales": scale.transpose(1, 2).half()}


def test_gptq_converts_to_chords_form():
    """A symmetric GPTQ g32 layer ([E, K/8, N] qweight, [E, K/32, N] scales) becomes the
    N-first humming form with the same codes and scales."""
    e, n, k = 2, 64, 128
    codes, scale, schema, tensors = gptq_g32_layer(3)
    tensors.update(qzeros=torch.zeros(e, k // 32, n // 8, dtype=torch.int32), g_idx=torch.zeros(e, k))
    humming_schema, out = schema.convert_humming(tensors, [n], [k], torch.bfloat16, num_experts=e)
    assert isinstance(humming_schema, HummingWeightSchema) and humming_schema.weight_scale_group_size == 32
    assert torch.equal(out["weight"], codes) and torch.equal(out["weight_scale"], scale)
    with pytest.raises(ValueError, match="qweight must be int32"):
        schema.convert_humming({**tensors, "qweight": codes}, [n], [k], torch.bfloat16, num_experts=e)
    with pytest.raises(ValueError, match=r"needs qweight, scales; missing scales, got \['g_idx', 'qweight', 'qzeros'\]$"):
        schema.convert_humming({k_: v for k_, v in tensors.items() if k_ != "scales"}, [n], [k], torch.bfloat16,
                               num_experts=e)
    # A transformed layer's tensors (what vLLM's direct weight reload hands back) get the way out.
    with pytest.raises(ValueError, match="missing qweight, scales.*VLLM_RELOAD_MODE=layerwise"):
        schema.convert_humming({"weight": codes, "weight_scale": scale}, [n], [k], torch.bfloat16, num_experts=e)
    # A compressed-tensors layer without its packed weight is only missing it.
    ct = BaseWeightSchema.from_config({"quant_method": "compressed-tensors", "format": "pack-quantized", "type": "int",
                                       "num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": True})
    with pytest.raises(ValueError, match=r"missing weight_packed, got \['weight_scale', 'weight_shape'\]$"):
        ct.convert_humming({"weight_scale": scale, "weight_shape": torch.tensor([n, k])}, [n], [k], torch.bfloat16)


def test_conversions_keep_a_checkpoint_bias_for_the_transform_to_refuse():
    """vLLM's GPTQ MoE layers keep expert biases a checkpoint stores even where the model
    declares none (has_bias False): the conversion must not drop one, or the layer would run
    without it. An all-zero bias adds nothing and is left out."""
    e, n, k = 2, 64, 128
    codes, scale, gptq, gptq_layer = gptq_g32_layer(5)
    ct = BaseWeightSchema.from_config(CT_CONFIG)
    ct_tensors = {"weight_packed": codes, "weight_scale": scale.float(), "weight_shape": torch.tensor([n, k])}
    awq = BaseWeightSchema.from_config({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True})
    awq_tensors = {"qweight": torch.zeros(e, k, n // 8, dtype=torch.int32),
                   "qzeros": torch.full((e, k // 32, n // 8), 0x88888888 - 2**32, dtype=torch.int32),
                   "scales": torch.ones(e, k // 32, n, dtype=torch.float16)}
    for schema, tensors in ((gptq, gptq_layer), (ct, ct_tensors), (awq, awq_tensors)):
        bias = torch.zeros(e, n)
        _, out = schema.convert_humming({**tensors, "bias": bias}, [n], [k], torch.bfloat16, num_experts=e)
        assert "bias" not in out
        bias[1, 7] = 0.5
        humming_schema, out = schema.convert_humming({**tensors, "bias": bias}, [n], [k], torch.bfloat16,
                                                     num_experts=e)
        assert out["bias"] is bias
        with pytest.raises(NotImplementedError, match="a bias is unsupported"):
            prepare_and_transform_humming_tensors(out, shape_n=n, shape_k=k, weight_schema=humming_schema,
                                                  num_experts=e)


def test_transform_refuses_at_load_and_tuning_rows():
    schema = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32)
    weight = torch.zeros(8, 512, 32, dtype=torch.int32)
    scale = torch.ones(8, 512, 8, dtype=torch.bfloat16)
    common = dict(shape_n=512, shape_k=256, weight_schema=schema, num_experts=8)
    with pytest.raises(NotImplementedError, match="bias"):
        prepare_and_transform_humming_tensors({"weight": weight, "weight_scale": scale}, has_bias=True, **common)
    with pytest.raises(NotImplementedError, match="zero_point"):
        prepare_and_transform_humming_tensors({"weight": weight, "weight_scale": scale, "zero_point": scale},
                                              **common)
    with pytest.raises(NotImplementedError, match="model dtype torch.float32"):
        prepare_and_transform_humming_tensors({"weight": weight, "weight_scale": scale}, torch_dtype=torch.float32,
                                              **common)
    with pytest.raises(NotImplementedError, match="K=96"):
        prepare_and_transform_humming_tensors({"weight": weight, "weight_scale": scale}, **{**common, "shape_k": 96})
    with pytest.raises(ValueError, match="'weight' must be int32"):
        prepare_and_transform_humming_tensors({"weight": weight[:, :, :16], "weight_scale": scale}, **common)
    config = LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                         bs_dtype=dtypes.bfloat16, shape_n=512, shape_k=256, num_experts=8)
    rows = get_heuristics_config(layer_config=config, use_f16_accum=False, use_batch_invariant=False,
                                 gemm_type=GemmType.INDEXED)
    json.dumps(rows)
    for m in (1, 5, 85, 86, 170, 171, 10_000_000):
        covering = [r for r in rows if r[0] < m <= r[1]]
        assert len(covering) == 1, m
        assert covering[0][2]["block_shape"][0] == ck.block_size_for_rows(m / 8)
    with pytest.raises(NotImplementedError, match="VLLM_HUMMING_USE_F16_ACCUM"):
        get_heuristics_config(layer_config=config, use_f16_accum=True)
    with pytest.raises(NotImplementedError, match="VLLM_BATCH_INVARIANT"):
        get_heuristics_config(layer_config=config, use_batch_invariant=True)


# -- the humming facade in each model dtype ----------------------------------------------------

FORMATS = {(torch.bfloat16, False): ck.FORMAT_INT4_G128, (torch.float16, False): ck.FORMAT_INT4_G128_FP16,
           (torch.bfloat16, True): ck.FORMAT_INT4_G128_ZP, (torch.float16, True): ck.FORMAT_INT4_G128_ZP_FP16}


@pytest.mark.parametrize("zero_point", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_facade_packs_the_model_dtypes_format(cpu_pack, dtype, zero_point):
    """A GPTQ g128 layer (symmetric, or gptq_v2 zero points) as vLLM holds it in a model of
    `dtype` (scales in params_dtype) -> convert_humming -> prepare_and_transform_humming_tensors:
    the LayerConfig names the dtype, the packed tag is that dtype's group-128 format (float16: 7,
    or 9 with zero points), and the scales reach the packer in that dtype, float16 ones bit for
    bit."""
    gen = torch.Generator().manual_seed(11)
    e, n, k, group = 2, 64, 256, 128
    codes = torch.randint(0, 16, (e, n, k), generator=gen)
    scales = (torch.rand(e, k // group, n, generator=gen) * 0.01 + 1e-3).half().to(dtype)  # [E, K/G, N]
    tensors = {"qweight": pack_int4(codes).transpose(1, 2).contiguous(), "scales": scales}
    zeros = torch.randint(0, 16, (e, n, k // group), generator=gen)
    if zero_point:
        tensors["qzeros"] = pack_int4(zeros.transpose(1, 2))  # [E, K/G, N/8], packed along N
    schema = BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": group, "desc_act": False,
                                           "sym": not zero_point, "format": "gptq_v2"})
    humming, out = schema.convert_humming(tensors, [n // 2, n // 2], [k], dtype, num_experts=e)
    assert out["weight_scale"].dtype == dtype
    config, packed = prepare_and_transform_humming_tensors(out, shape_n=n, shape_k=k, weight_schema=humming,
                                                           input_schema=HummingInputSchema(), num_experts=e,
                                                           torch_dtype=dtype)
    model = dtypes.DataType.from_torch_dtype(dtype)
    assert config.a_dtype == model and config.c_dtype == model and config.bs_dtype == model
    assert config.torch_dtype is dtype and config.has_zero_point == zero_point
    assert config.packed_tag == ck.expected_tag(e, n, k, dtype, zero_point=zero_point, group_size=group)
    assert config.packed_tag[1] == FORMATS[(dtype, zero_point)]
    assert ck.W4A16Weight(packed["weight"], packed["weight_scale"], config.packed_tag).dtype is dtype
    assert packed["weight"].shape[0] == e and packed["weight_scale"].shape[0] == e
    (launch,) = cpu_pack
    want = scales.transpose(1, 2)  # one scale per 128 weights, as the checkpoint stores them
    assert launch["src_format"] & _ops.SRC_GROUP_128
    assert launch["scales"].dtype == dtype
    assert torch.equal(launch["scales"].view(torch.int16), want.view(torch.int16))
    if zero_point:
        got = launch["zero_points"].reshape(e, n, k // group).long()
        assert torch.equal(got, zeros)


def test_facade_refuses_mismatched_dtypes(cpu_pack):
    """Activations, declared scale types and forward calls in a dtype other than the model's
    are refused with the dtypes named; the model dtype reaches the next check."""
    from humming.forward import humming_forward
    e, n, k = 2, 64, 128
    tensors = {"weight": torch.zeros(e, n, k // 8, dtype=torch.int32),
               "weight_scale": torch.ones(e, n, k // 32, dtype=torch.float16)}
    schema = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32)
    bf16_scales = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32, bs_dtype="bfloat16")
    common = dict(shape_n=n, shape_k=k, num_experts=e, torch_dtype=torch.float16)
    with pytest.raises(ValueError, match="activation type bfloat16 is not the model dtype torch.float16"):
        prepare_and_transform_humming_tensors(tensors, weight_schema=schema,
                                              input_schema=HummingInputSchema(a_dtype="bfloat16"), **common)
    with pytest.raises(NotImplementedError, match="weight scale type bfloat16 with model dtype torch.float16"):
        prepare_and_transform_humming_tensors(tensors, weight_schema=bf16_scales, **common)
    with pytest.raises(NotImplementedError, match="weight scale type bfloat16 with model dtype torch.float16"):
        bf16_scales.convert_humming(tensors, [n], [k], torch.float16, num_experts=e)
    assert not cpu_pack  # refused before packing
    # What vLLM's check_and_fallback_input_schema asks.
    fp16_inputs = HummingInputSchema(a_dtype="float16")
    assert HummingInputSchema().is_compatible_with(schema, torch.float16)
    assert fp16_inputs.is_compatible_with(schema, torch.float16)
    assert HummingInputSchema(a_dtype="float16").is_compatible_with(
        HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32, bs_dtype="float16"), torch.float16)
    assert not fp16_inputs.is_compatible_with(schema, torch.bfloat16)
    assert not HummingInputSchema().is_compatible_with(bf16_scales, torch.float16)
    assert not HummingInputSchema().is_compatible_with(schema, torch.float32)
    # A forward call on the float16 layer: bf16 inputs or outputs never reach a kernel.
    config, packed = prepare_and_transform_humming_tensors(tensors, weight_schema=schema, **common)
    call = dict(weight=packed["weight"], weight_scale=packed["weight_scale"],
                expert_layout=torch.zeros(e + 1, dtype=torch.int64))
    with pytest.raises(ValueError, match="transformed for torch.float16 activations .* inputs torch.bfloat16"):
        humming_forward(config, torch.zeros(4, k, dtype=torch.bfloat16), **call)
    with pytest.raises(ValueError, match="outputs torch.bfloat16"):
        humming_forward(config, torch.zeros(4, k, dtype=torch.float16), outputs=torch.zeros(4, n, dtype=torch.bfloat16),
                        **call)
    with pytest.raises(ValueError, match="lives on cuda:0"):  # float16 passes on to the device check
        humming_forward(config, torch.zeros(4, k, dtype=torch.float16), **call)


def test_online_quantization_in_float16():
    """--quantization humming's online path in a float16 model: quant_tensor(w, schema,
    torch.float16), as vLLM calls it, computes the scales in float16 (the dtype chord stores)."""
    gen = torch.Generator().manual_seed(12)
    w = torch.randn(2, 64, 128, generator=gen)
    codes, scale, _, _ = quantize_weight(w, dtypes.uint4, dtypes.float16, 32, pack=True)
    assert scale.dtype == torch.float16
    back = dequantize_weight(codes, scale, packed=True)
    assert ((back - w).abs() <= scale.float().repeat_interleave(32, -1) * 0.5 + 1e-6).all()
    schema = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32)
    out = schema.quant_tensor(w, schema, torch.float16)
    assert torch.equal(out["weight"], codes) and out["weight_scale"].dtype == torch.float16
    assert torch.equal(out["weight_scale"], scale)
    assert schema.quant_tensor(w, torch.bfloat16)["weight_scale"].dtype == torch.bfloat16
    with pytest.raises(NotImplementedError, match="scale type float32"):
        quantize_weight(w, dtypes.uint4, dtypes.float32, 32)


def test_size_helpers_refusal_is_a_named_error():
    """The library answers -1 for shapes its packers refuse; Python turns that into chord's
    ValueError rather than a negative torch.empty size."""
    from chord_kernels._ops import checked_bytes
    from chord_kernels._ops import _C as lib
    assert checked_bytes(lib.nf4_weight_bytes, 1, 16, 64) == 16 * 64 // 2
    for fn in (lib.nf4_weight_bytes, lib.nf4_absmax_bytes, lib.weight_bytes, lib.scale_bytes):
        with pytest.raises(ValueError, match="E=-1 N=16 K=64"):
            checked_bytes(fn, -1, 16, 64)


def test_wheel_kernel_layer_gives_first_call_hits(tmp_path):
    """The wheel ships the default profiles' sm_90a kernels as a read-only layer that
    chord_kernels and the chord console script put on CHORD_CACHE_READONLY_DIRS: a fresh
    private cache then compiles nothing for them."""
    from chord_kernels import _native
    if not os.path.isdir(_native.KERNEL_LAYER):
        pytest.skip("this install has no kernel layer (built with CHORD_WHEEL_KERNELS=OFF, or from source)")
    env = {k: v for k, v in os.environ.items() if k != "CHORD_CACHE_READONLY_DIRS"}
    env["CHORD_CACHE_DIR"] = str(tmp_path / "cache")
    for profile in ("tp8", "qwen3", "ep8"):
        proc = subprocess.run([sys.executable, "-m", "chord_kernels_cli", "precompile", "--arch", "sm_90a",
                               "--profile", profile], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "(0 compiled," in proc.stdout, proc.stdout
    assert os.environ.get("CHORD_CACHE_READONLY_DIRS") == _native.KERNEL_LAYER


# -- checkpoint readers (chord_kernels.checkpoint) ------------------------------------------

def gptq_tensors(e=2, n=64, k=256, group=128, seed=0):
    """A symmetric GPTQ layer as the checkpoint stores it: qweight int32 [E, K/8, N] packed
    along K, scales fp16 [E, K/G, N], qzeros int32 [E, K/G, N/8] of 0x77777777, g_idx [E, K]."""
    gen = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (e, k, n), generator=gen, dtype=torch.int64)
    qweight = pack_int4(codes.transpose(1, 2)).transpose(1, 2)  # packed along K, N last
    scales = (torch.rand(e, k // group, n, generator=gen) * 0.01 + 0.001).to(torch.float16)
    qzeros = torch.full((e, k // group, n // 8), 0x77777777, dtype=torch.int32)
    g_idx = (torch.arange(k, dtype=torch.int32) // group).expand(e, k).contiguous()
    return codes, qweight, scales, qzeros, g_idx


def test_unpack_awq_column_order():
    """Nibble i of an AWQ word holds column 8 * word + (0, 2, 4, 6, 1, 3, 5, 7)[i]; codes and
    zero points come back N first."""
    from chord_kernels.checkpoint import unpack_awq
    word = sum(v << (4 * i) for i, v in enumerate([0, 2, 4, 6, 1, 3, 5, 7]))  # column c holds value c
    qweight = torch.tensor([[[word, word + 0x88888888 - 2**32]]], dtype=torch.int32).expand(1, 4, 2)
    codes, zeros = unpack_awq(qweight, qweight[:, :1])
    assert codes.shape == (1, 16, 4) and zeros.shape == (1, 16, 1)
    assert codes[0, :, 0].tolist() == list(range(8)) + list(range(8, 16))
    assert torch.equal(zeros[..., 0], codes[..., 0])


def _pack_cols(values):
    """uint [..., R, C] 0..15 -> int32 [..., R, C/8], nibble j = column 8c + j (GPTQ's qzeros,
    compressed-tensors' zero point transposed)."""
    v = values.to(torch.int64)
    words = sum(v[..., j::8] << (4 * j) for j in range(8))
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def test_gptq_zero_points_v1_v2_and_the_overflow():
    """v1 stores zero - 1, v2 the zero; a v1 nibble 0xF (zero 0 stored as -1) is refused."""
    from chord_kernels.checkpoint import unpack_gptq_zeros
    gen = torch.Generator().manual_seed(3)
    zeros = torch.randint(1, 16, (2, 4, 64), generator=gen)  # [E, K/G, N], v1-representable
    got = unpack_gptq_zeros(_pack_cols(zeros - 1), "v1")
    assert got.shape == (2, 64, 4) and got.dtype == torch.uint8
    assert torch.equal(got.to(torch.int64), zeros.transpose(1, 2))
    zeros[0, 0, 0] = 0
    assert torch.equal(unpack_gptq_zeros(_pack_cols(zeros), "v2").to(torch.int64), zeros.transpose(1, 2))
    with pytest.raises(NotImplementedError, match="0xF"):
        unpack_gptq_zeros(_pack_cols(torch.where(zeros == 0, 15, zeros - 1)), "v1")
    with pytest.raises(ValueError, match="'format' must be 'v1'"):
        unpack_gptq_zeros(_pack_cols(zeros), "gptq")


def test_gptq_asymmetric_needs_its_format():
    _, qweight, scales, qzeros, g_idx = gptq_tensors()
    with pytest.raises(NotImplementedError, match="pass format='v1'"):
        ck.from_gptq(qweight, scales, qzeros ^ 1, g_idx)
    with pytest.raises(ValueError, match="'format' must be None, 'v1' or 'v2'"):
        ck.from_gptq(qweight, scales, qzeros, g_idx, format="gptq_v2")
    for fmt in ("v1", "v2"):  # read, then packed on the GPU
        with pytest.raises(ValueError, match="CUDA device"):
            ck.from_gptq(qweight, scales, qzeros ^ 1, g_idx, format=fmt)
    # The v2 symmetric words read as v1: test_gptq_v1_reads_the_v2_symmetric_words_as_zero_nine.


def test_compressed_tensors_zero_point_unpacks_along_n():
    """weight_zero_point int32 [E, N/8, K/G]: nibble j of word (r, g) is row 8r + j's zero point
    (stored zp + 8, the codes' unsigned domain)."""
    from chord_kernels.checkpoint import unpack_compressed_tensors_zero_point
    gen = torch.Generator().manual_seed(4)
    zeros = torch.randint(0, 16, (2, 64, 4), generator=gen)  # [E, N, K/G]
    packed = _pack_cols(zeros.transpose(1, 2)).transpose(1, 2).contiguous()  # [E, N/8, K/G]
    assert packed.shape == (2, 8, 4)
    got = unpack_compressed_tensors_zero_point(packed)
    assert torch.equal(got.to(torch.int64), zeros)
    # By hand: row 9 is nibble 1 of word row 1.
    one = torch.zeros(1, 2, 1, dtype=torch.int32)
    one[0, 1, 0] = 5 << 4
    assert unpack_compressed_tensors_zero_point(one)[0, :, 0].tolist() == [0] * 9 + [5] + [0] * 6


def test_pack_w4a16_zero_point_checks():
    codes = torch.zeros(1, 64, 128, dtype=torch.uint8)
    scale = torch.ones(1, 64, 4, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="'zero_point' must have shape"):
        ck.pack_w4a16(codes, scale, zero_point=torch.zeros(1, 64, 2, dtype=torch.uint8))
    with pytest.raises(ValueError, match="must be an integer tensor"):
        ck.pack_w4a16(codes, scale, zero_point=torch.zeros(1, 64, 4))
    with pytest.raises(ValueError, match="in 0..15"):
        ck.pack_w4a16(codes, scale, zero_point=torch.full((1, 64, 4), 16, dtype=torch.int32))
    with pytest.raises(ValueError, match="CUDA device"):
        ck.pack_w4a16(codes, scale, zero_point=torch.full((1, 64, 4), 3, dtype=torch.uint8))
    assert ck.expected_tag(1, 64, 128, torch.float16, zero_point=True)[1] == _ops.FORMAT_INT4_G32_ZP_FP16
    assert ck.expected_tag(1, 64, 128, zero_point=True)[1] == _ops.FORMAT_INT4_G32_ZP


def test_checkpoint_readers_refuse_what_they_cannot_serve():
    _, qweight, scales, qzeros, g_idx = gptq_tensors()
    with pytest.raises(NotImplementedError, match="symmetric zero"):
        ck.from_gptq(qweight, scales, qzeros ^ 1, g_idx)
    shuffled = g_idx[:, torch.randperm(256, generator=torch.Generator().manual_seed(1))]
    with pytest.raises(NotImplementedError, match="act-order"):
        ck.from_gptq(qweight, scales, qzeros, shuffled)
    with pytest.raises(ValueError, match="'qweight' must be torch.int32"):
        ck.from_gptq(qweight.to(torch.int64), scales, qzeros, g_idx)
    with pytest.raises(ValueError, match="'scales' must be"):
        ck.from_gptq(qweight, scales[:, :, :32], qzeros, g_idx)
    with pytest.raises(ValueError, match="'qzeros' must be"):
        ck.from_gptq(qweight, scales, qzeros[:, :, :4], g_idx)
    with pytest.raises(ValueError, match="3 scale groups do not divide K = 256"):
        ck.from_gptq(qweight, scales[:, :1].expand(-1, 3, -1), None, None)
    with pytest.raises(ValueError, match="'qweight' is a meta tensor"):
        ck.from_gptq(qweight.to("meta"), scales.to("meta"))
    with pytest.raises(ValueError, match="'g_idx' is a meta tensor"):
        ck.from_gptq(qweight, scales, qzeros, g_idx.to("meta"))
    with pytest.raises(ValueError, match="'qweight' must hold K/8 > 0"):
        ck.from_gptq(torch.zeros(1, 0, 64, dtype=torch.int32), torch.ones(1, 1, 64))
    # AWQ: qweight [E, K, N/8], qzeros [E, K/G, N/8] in the interleaved column order.
    awq_q = torch.zeros(2, 256, 8, dtype=torch.int32)
    awq_s = torch.ones(2, 2, 64, dtype=torch.float16)
    eights = torch.full((2, 2, 8), 0x88888888 - 2**32, dtype=torch.int32)
    # Zero points other than 8 are served: the reader gets to the pack, which needs the GPU.
    with pytest.raises(ValueError, match="CUDA device"):
        ck.from_awq(awq_q, eights ^ 0x10, awq_s)  # one column's zero point is 9
    with pytest.raises(ValueError, match="'qzeros' must be"):
        ck.from_awq(awq_q, eights[:, :, :4], awq_s)
    with pytest.raises(ValueError, match="'scales' must be"):
        ck.from_awq(awq_q, eights, awq_s[:, :, :32])
    with pytest.raises(ValueError, match="'qweight' must hold K > 0"):
        ck.from_awq(torch.zeros(1, 0, 8, dtype=torch.int32), torch.zeros(1, 1, 8, dtype=torch.int32),
                    torch.ones(1, 1, 64))
    packed = torch.zeros(2, 64, 32, dtype=torch.int32)
    with pytest.raises(ValueError, match="CUDA device"):  # asymmetric: served, packed on the GPU
        ck.from_compressed_tensors(packed, torch.ones(2, 64, 2), torch.zeros(2, 8, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="'weight_zero_point' must be int32"):
        ck.from_compressed_tensors(packed, torch.ones(2, 64, 2), torch.zeros(2, 64, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="weight_shape"):
        ck.from_compressed_tensors(packed, torch.ones(2, 64, 2), weight_shape=torch.tensor([[64, 128]] * 2))
    with pytest.raises(ValueError, match="'weight_shape' is a meta tensor"):
        ck.from_compressed_tensors(packed, torch.ones(2, 64, 2), weight_shape=torch.tensor([64, 256], device="meta"))
    with pytest.raises(ValueError, match="'weight_g_idx' is a meta tensor"):
        ck.from_compressed_tensors(packed, torch.ones(2, 64, 2), weight_g_idx=torch.zeros(2, 256, dtype=torch.int32,
                                                                                         device="meta"))
    with pytest.raises(ValueError, match="group size 48"):
        ck.from_compressed_tensors(torch.zeros(2, 64, 24, dtype=torch.int32), torch.ones(2, 64, 4))
    with pytest.raises(ValueError, match="'weight_scale' must be"):
        ck.from_compressed_tensors(packed, torch.ones(2, 32, 2))


def test_checkpoint_readers_refuse_a_partial_last_group(cpu_pack):
    """K 192 at group 128: the quantizer stores ceil(192 / 128) = 2 scale groups, the last one
    partial. Read as K over the groups (96), k 96..127 would take the second group's scale, so
    a size that is not a power of two needs the config's group_size, and a partial group is
    refused."""
    _, qweight, scales, _, _ = gptq_tensors(k=192, group=96)
    ct_q, ct_s = qweight.transpose(1, 2).contiguous(), scales.transpose(1, 2).contiguous()
    awq_q = torch.zeros(2, 192, 8, dtype=torch.int32)
    awq_z = torch.full((2, 2, 8), 0x88888888 - 2**32, dtype=torch.int32)
    readers = (lambda **kw: ck.from_gptq(qweight, scales, **kw),
               lambda **kw: ck.from_compressed_tensors(ct_q, ct_s, **kw),
               lambda **kw: ck.from_awq(awq_q, awq_z, scales, **kw))
    for read in readers:
        with pytest.raises(ValueError, match="group size of 96, which quantizers do not write"):
            read()
        with pytest.raises(ValueError, match="K = 192 is not a multiple of the group size 128"):
            read(group_size=128)
        with pytest.raises(ValueError, match="2 scale groups, but K = 192 at group size 64 has 3"):
            read(group_size=64)
        with pytest.raises(ValueError, match="'group_size' must be a positive int or -1"):
            read(group_size=0)
        read(group_size=96)  # a group of 96 that the config names is served
    assert len(cpu_pack) == 3
    # Channel-wise: one group per row, as the config's -1 says.
    ck.from_gptq(qweight, scales[:, :1], group_size=-1)
    assert len(cpu_pack) == 4
    with pytest.raises(ValueError, match="1 scale groups, but K = 192 at group size 96 has 2"):
        ck.from_gptq(qweight, scales[:, :1], group_size=96)


def test_gptq_v1_reads_the_v2_symmetric_words_as_zero_nine(cpu_pack):
    """0x88888888 is the symmetric zero of the v2 form; read as v1 (zero - 1 stored) every zero
    point is 9, packed with zero points; under v2 the layer packs symmetric."""
    _, qweight, scales, qzeros, g_idx = gptq_tensors()
    v2_eights = torch.full_like(qzeros, 0x88888888 - 2**32)
    ck.from_gptq(qweight, scales, v2_eights, g_idx, format="v1")
    zero_points = cpu_pack[-1]["zero_points"]
    assert zero_points is not None and bool((zero_points == 9).all())
    ck.from_gptq(qweight, scales, v2_eights, g_idx, format="v2")
    assert cpu_pack[-1]["zero_points"] is None


def test_checkpoint_readers_refuse_other_bit_widths():
    """An 8-bit layer has the shapes of a 4-bit one of twice the K: the config's bit width is
    what tells them apart, and every reader refuses anything but 4 before reading a tensor."""
    _, qweight, scales, _, _ = gptq_tensors()
    ct_q, ct_s = qweight.transpose(1, 2).contiguous(), scales.transpose(1, 2).contiguous()
    awq_q = torch.zeros(2, 256, 8, dtype=torch.int32)
    awq_z = torch.full((2, 2, 8), 0x88888888 - 2**32, dtype=torch.int32)
    awq_s = torch.ones(2, 2, 64, dtype=torch.float16)
    readers = (("bits", lambda b: ck.from_gptq(qweight, scales, bits=b)),
               ("num_bits", lambda b: ck.from_compressed_tensors(ct_q, ct_s, bits=b)),
               ("w_bit", lambda b: ck.from_awq(awq_q, awq_z, awq_s, bits=b)))
    for key, read in readers:
        with pytest.raises(NotImplementedError, match=f"8-bit weights \\('{key}': 8\\)"):
            read(8)
        with pytest.raises(ValueError, match=f"'bits' must be an int \\(the quantization config's '{key}'\\)"):
            read("4")
        with pytest.raises(ValueError, match="'bits' must be an int"):
            read(True)
        # bits=4 reads on: the tensors' own checks come next (packing needs a CUDA device here).
        with pytest.raises(ValueError, match="CUDA device"):
            read(4)


def test_checkpoint_readers_name_their_own_arguments():
    """Each reader refuses act-order by its format's own g_idx name, checks the scales as the
    caller passed them (the error names that argument and indexes its layout), and checks
    compressed-tensors' weight_shape per expert in any integer dtype."""
    _, qweight, scales, qzeros, g_idx = gptq_tensors()
    bad = scales.clone()
    bad[1, 1, 5] = float("inf")
    with pytest.raises(ValueError, match=r"'scales' at \(expert, group, column\) \(1, 1, 5\) is inf"):
        ck.from_gptq(qweight, bad, qzeros, g_idx, dtype=torch.float16)
    awq_q = torch.zeros(2, 256, 8, dtype=torch.int32)
    eights = torch.full((2, 2, 8), 0x88888888 - 2**32, dtype=torch.int32)
    awq_s = torch.ones(2, 2, 64, dtype=torch.float16)
    awq_s[0, 1, 9] = float("nan")
    with pytest.raises(ValueError, match=r"'scales' at \(expert, group, column\) \(0, 1, 9\) is nan"):
        ck.from_awq(awq_q, eights, awq_s)
    with pytest.raises(ValueError, match="'dtype' must be torch.bfloat16 or torch.float16"):
        ck.from_awq(awq_q, eights, torch.ones(2, 2, 64), dtype=torch.int8)
    # compressed-tensors: weight_packed [E, N, K/8], weight_scale [E, N, K/G].
    ct_q = qweight.transpose(1, 2).contiguous()
    ct_s = scales.transpose(1, 2).contiguous()
    big = ct_s.float()
    big[0, 7, 1] = 1e6  # above fp16's range
    with pytest.raises(ValueError, match=r"'weight_scale' at \(expert, row, group\) \(0, 7, 1\) is 1000000.0"):
        ck.from_compressed_tensors(ct_q, big, dtype=torch.float16)
    shuffled = g_idx[:, torch.randperm(256, generator=torch.Generator().manual_seed(1))]
    with pytest.raises(NotImplementedError, match="act-order \\('weight_g_idx'"):
        ck.from_compressed_tensors(ct_q, ct_s, weight_g_idx=shuffled)
    with pytest.raises(ValueError, match="'weight_g_idx' must be int32"):
        ck.from_compressed_tensors(ct_q, ct_s, weight_g_idx=g_idx[:, :128])
    with pytest.raises(ValueError, match="CUDA device"):  # in K order: read, then packed on the GPU
        ck.from_compressed_tensors(ct_q, ct_s, weight_g_idx=g_idx)
    with pytest.raises(ValueError, match=r"'weight_shape' says \[64, 128\] \(row 1\)"):
        ck.from_compressed_tensors(ct_q, ct_s, weight_shape=torch.tensor([[64, 256], [64, 128]]))
    with pytest.raises(ValueError, match=r"'weight_shape' says \[64, 0\] \(row 0\)"):  # 256 wrapped in uint8
        ck.from_compressed_tensors(ct_q, ct_s, weight_shape=torch.tensor([64, 256]).to(torch.uint8))
    with pytest.raises(ValueError, match="CUDA device"):
        ck.from_compressed_tensors(ct_q, ct_s, weight_shape=torch.tensor([64, 256], dtype=torch.int16))
    with pytest.raises(ValueError, match="'weight_packed' must hold K/8 > 0 words"):
        ck.from_compressed_tensors(torch.zeros(2, 64, 0, dtype=torch.int32), torch.ones(2, 64, 1))


def test_facade_converts_zero_points_into_the_humming_form():
    """GPTQ sym: false (v1 and gptq_v2), AWQ and compressed-tensors symmetric: false convert to
    HummingWeightSchema(has_zero_point=True) with zero_point int32 [E, N/8, K/G] packed along N,
    and dequantize to (code - zero) * scale; prepare_and_transform requires the tensor exactly
    when the schema has zero points."""
    from humming.utils.weight import pack_zero_point, unpack_zero_point
    gen = torch.Generator().manual_seed(5)
    e, n, k, group = 2, 64, 256, 128
    codes = torch.randint(0, 16, (e, n, k), generator=gen)  # [E, N, K]
    zeros = torch.randint(1, 16, (e, n, k // group), generator=gen)  # [E, N, K/G]
    scales = torch.rand(e, n, k // group, generator=gen).to(torch.bfloat16)
    zp_form = pack_zero_point(zeros)
    assert zp_form.shape == (e, n // 8, k // group) and torch.equal(unpack_zero_point(zp_form).long(), zeros)
    want = (codes - zeros.repeat_interleave(group, -1)).float() * scales.float().repeat_interleave(group, -1)

    def check(schema, tensors):
        humming, out = schema.convert_humming(tensors, [n], [k], torch.bfloat16, num_experts=e)
        assert humming.has_zero_point and torch.equal(out["zero_point"], zp_form)
        assert torch.equal(humming.dequant_tensors(out), want)

    qweight = pack_int4(codes.transpose(1, 2).reshape(e, k // 8, 8, n).transpose(2, 3)).reshape(e, k // 8, n)
    assert torch.equal(unpack_int4(qweight.transpose(1, 2).contiguous()).long(), codes)
    for fmt, stored in ((None, zeros - 1), ("gptq_v2", zeros)):
        schema = BaseWeightSchema.from_config({"quant_method": "gptq", "bits": 4, "group_size": group,
                                               "desc_act": False, "sym": False, "format": fmt})
        qzeros = pack_int4(stored.transpose(1, 2))  # [E, K/G, N/8] packed along N
        check(schema, {"qweight": qweight, "scales": scales.transpose(1, 2), "qzeros": qzeros})
    awq_order = (0, 2, 4, 6, 1, 3, 5, 7)

    def awq_words(v):  # [E, R, N] -> [E, R, N/8] in AWQ's column order
        w = v.reshape(*v.shape[:2], -1, 8)
        words = sum(w[..., c].to(torch.int64) << (4 * i) for i, c in enumerate(awq_order))
        return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)

    awq = BaseWeightSchema.from_config({"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True})
    check(awq, {"qweight": awq_words(codes.transpose(1, 2)), "qzeros": awq_words(zeros.transpose(1, 2)),
                "scales": scales.transpose(1, 2)})
    ct = BaseWeightSchema.from_config({**CT_CONFIG, "group_size": group, "symmetric": False})
    check(ct, {"weight_packed": pack_int4(codes), "weight_scale": scales, "weight_zero_point": zp_form})
    with pytest.raises(ValueError, match="weight_zero_point int32"):
        ct.convert_humming({"weight_packed": pack_int4(codes), "weight_scale": scales}, [n], [k], torch.bfloat16,
                           num_experts=e)
    # The transform: a zero_point tensor needs a schema with zero points, and the reverse.
    sym = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=group)
    asym = HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=group, has_zero_point=True)
    common = dict(shape_n=n, shape_k=k, num_experts=e)
    with pytest.raises(NotImplementedError, match="has_zero_point=False"):
        prepare_and_transform_humming_tensors({"weight": pack_int4(codes), "weight_scale": scales,
                                               "zero_point": zp_form}, weight_schema=sym, **common)
    with pytest.raises(ValueError, match="'zero_point' is missing"):
        prepare_and_transform_humming_tensors({"weight": pack_int4(codes), "weight_scale": scales},
                                              weight_schema=asym, **common)
    with pytest.raises(ValueError, match="'zero_point' must be int32"):
        prepare_and_transform_humming_tensors({"weight": pack_int4(codes), "weight_scale": scales,
                                               "zero_point": zp_form[:, :4]}, weight_schema=asym, **common)
    # The --quantization humming path allocates the zero point beside the weight and scale.
    attrs = asym.get_tensors_attrs(n, k, torch.bfloat16, num_experts=e)
    assert attrs["zero_point"]["shape"] == (e, n // 8, k // group) and attrs["zero_point"]["dtype"] == torch.int32
    assert "qzeros" in awq.get_tensors_attrs(n, k, torch.bfloat16)
