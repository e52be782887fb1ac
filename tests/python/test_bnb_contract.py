"""CPU: the installed bitsandbytes against chord's NF4 reader and quantizer. A QuantState
that bitsandbytes' own quantize_4bit makes (blocksize 64, FP32 absmax or double-quantized)
is read by NF4Weights.from_quant_state into the state chord packs, and that state's
dequantization equals bitsandbytes' dequantize_4bit bit for bit; chord's quantize_nf4 makes
the same codes and statistics, but for two corners where bitsandbytes' CPU backend and its
CUDA kernel disagree. Runs on bitsandbytes' CPU backend; the GPU tests compare chord's
CUDA operators with this reference.

Skips when bitsandbytes is not installed, unless CHORD_REQUIRE_BNB=1 (CI's step that
installs it sets it)."""
import json
import os

import pytest
import torch

if os.environ.get("CHORD_REQUIRE_BNB") == "1":
    import bitsandbytes as bnb
else:
    bnb = pytest.importorskip("bitsandbytes", reason="bitsandbytes is not installed (CI's Python step installs it)")

import chord_kernels as ck  # noqa: E402

BITS = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}


def experts(e, n, k, dtype, seed):
    """Weights with a spread of block maxima, one all-zero block and one block whose
    largest magnitude is negative (the code table is not symmetric)."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(e, n, k, generator=gen) * 0.02
    w *= torch.rand(e, n, 1, generator=gen) * 4 + 0.1
    w[0, 0, :64] = 0
    w[0, 1, 5] = -1.0
    return w.to(dtype)


def chord_state(packed, qs, monkeypatch):
    """NF4Weights.from_quant_state's reading of a bitsandbytes QuantState, stopped before the
    device pack (this test has no GPU)."""
    monkeypatch.setattr(ck.NF4Weights, "_pack", lambda self, state, native: None)
    return ck.NF4Weights.from_quant_state(packed, qs, keep_state=True).quant_state


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("compress", [False, True])
def test_bitsandbytes_quant_state_reads_bit_exact(monkeypatch, compress, dtype):
    w = experts(3, 32, 256, dtype, seed=1)
    packed, qs = bnb.functional.quantize_4bit(w, blocksize=64, compress_statistics=compress, quant_type="nf4")
    state = chord_state(packed, qs, monkeypatch)
    assert state.shape == (3, 32, 256) and state.dtype == dtype and state.nested == compress
    theirs = bnb.functional.dequantize_4bit(packed, qs)
    ours = ck.dequantize_quant_state(state)
    assert ours.dtype == theirs.dtype == dtype and ours.shape == theirs.shape
    assert torch.equal(ours.view(BITS[dtype]), theirs.view(BITS[dtype]))


def test_bitsandbytes_quant_state_of_one_matrix(monkeypatch):
    """A dense layer's [N, K] weight reads as one expert."""
    w = experts(1, 48, 128, torch.bfloat16, seed=2)[0]
    packed, qs = bnb.functional.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    state = chord_state(packed, qs, monkeypatch)
    assert state.shape == (1, 48, 128)
    theirs = bnb.functional.dequantize_4bit(packed, qs)
    assert torch.equal(ck.dequantize_quant_state(state)[0].view(torch.int16), theirs.view(torch.int16))


@pytest.mark.parametrize("blocksize,quant_type", [(128, "nf4"), (64, "fp4")])
def test_other_bitsandbytes_states_are_refused_by_name(monkeypatch, blocksize, quant_type):
    w = experts(1, 32, 256, torch.bfloat16, seed=3)
    packed, qs = bnb.functional.quantize_4bit(w, blocksize=blocksize, quant_type=quant_type)
    with pytest.raises(NotImplementedError, match=quant_type if quant_type != "nf4" else f"blocksize {blocksize}"):
        chord_state(packed, qs, monkeypatch)


@pytest.mark.parametrize("seed", [4, 7, 11])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("compress", [False, True])
def test_quantize_nf4_equals_bitsandbytes(compress, dtype, seed):
    """chord's quantizer follows bitsandbytes' CUDA kernel. Against its CPU backend, run here:
    - the 4-bit codes and FP32 absmax are the same but for an all-zero block: CUDA scales by
      1 / 0 and codes the NaN as code 0 (-1.0), the CPU backend codes 0.0 (code 7); both
      dequantize to zero;
    - the double-quantization offset is the mean of the absmax rounded once (FP64 sum), where
      bitsandbytes takes torch's FP32 mean on its device: they may differ by a few FP32 ulps;
    - given the same offset, the 8-bit absmax codes are the same but for a few values near
      the middle between two codes, where the CPU backend takes the farther one; chord's is
      the nearest code."""
    w = experts(2, 64, 512, dtype, seed=seed)
    packed, qs = bnb.functional.quantize_4bit(w, blocksize=64, compress_statistics=compress, quant_type="nf4")
    mine = ck.quantize_nf4(w, double_quant=compress)

    theirs = packed.reshape(-1)
    zero_block = (w.reshape(-1, 64) == 0).all(1).repeat_interleave(32)
    assert zero_block.any()
    assert torch.equal(mine.packed[~zero_block], theirs[~zero_block])
    assert (mine.packed[zero_block] == 0x00).all() and (theirs[zero_block] == 0x77).all()
    raw = ck.quantize_nf4(w, double_quant=False).absmax
    if not compress:
        assert torch.equal(mine.absmax, qs.absmax)
        return
    assert torch.equal(raw, bnb.functional.quantize_4bit(w, blocksize=64, compress_statistics=False,
                                                         quant_type="nf4")[1].absmax)
    assert float(mine.offset) == float(torch.tensor(raw.double().mean().item(), dtype=torch.float32))
    # An FP32 sum of the blocks' absmax in some order: a few ulps off the rounded mean.
    ulps = 4 * torch.finfo(torch.float32).eps * abs(float(mine.offset))
    assert abs(float(mine.offset) - float(qs.offset)) <= ulps
    # bitsandbytes' 8-bit step on chord's offset.
    codes, state2 = bnb.functional.quantize_blockwise(raw - mine.offset, blocksize=256)
    assert torch.equal(mine.nested_absmax, state2.absmax)
    assert torch.equal(mine.nested_code, state2.code)
    scale = state2.absmax.repeat_interleave(256)[:raw.numel()]
    exact = (raw - mine.offset).double() / scale.double()  # the value the 8-bit code stands for
    code = state2.code.double()
    differ = (mine.absmax != codes).nonzero().flatten()
    assert differ.numel() <= 0.01 * raw.numel()
    for i in differ.tolist():
        a, b = int(mine.absmax[i]), int(codes[i])
        assert abs(a - b) == 1
        assert abs(float(code[a] - exact[i])) == float((code - exact[i]).abs().min())


# -- checkpoints: the state dict a bitsandbytes 4-bit Linear saves ----------------------------

def linear4bit_state(weight, compress):
    """The state dict bitsandbytes' Linear4bit saves (what transformers writes for a
    load_in_4bit model), quantized on the CPU, and the weight it dequantizes to."""
    n, k = weight.shape
    layer = bnb.nn.Linear4bit(k, n, bias=False, compute_dtype=weight.dtype, compress_statistics=compress,
                              quant_type="nf4")
    layer.weight = bnb.nn.Params4bit(weight, requires_grad=False, quant_type="nf4", compress_statistics=compress)
    layer = layer.to("cpu")
    assert layer.weight.bnb_quantized
    state = layer.state_dict()
    return state, bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state)


def moe_checkpoint(e, inter, hidden, dtype, compress, seed):
    """An MoE layer's experts as separate Linear4bit gate / up / down projections under
    transformers' names: the state dict and each expert's dequantized gate_up and down."""
    state, gate_up, down = {}, [], []
    for i in range(e):
        parts = {}
        for j, (proj, n, k) in enumerate((("gate_proj", inter, hidden), ("up_proj", inter, hidden),
                                          ("down_proj", hidden, inter))):
            sd, dense = linear4bit_state(experts(1, n, k, dtype, seed=seed + 3 * i + j)[0], compress)
            state.update({f"mlp.experts.{i}.{proj}.{key}": v for key, v in sd.items()})
            parts[proj] = dense
        gate_up.append(torch.cat([parts["gate_proj"], parts["up_proj"]]))
        down.append(parts["down_proj"])
    return state, torch.stack(gate_up), torch.stack(down)


def names(e, *projs):
    return [tuple(f"mlp.experts.{i}.{p}.weight" for p in projs) for i in range(e)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("compress", [True, False])
def test_moe_checkpoint_reads_bit_exact(compress, dtype):
    """Per-expert Linear4bit weights, each with its own statistics, read into one [E, N, K]
    state (gate and up stacked along N) that dequantizes to bitsandbytes' weights bit for bit."""
    e, inter, hidden = 3, 64, 128
    state, gate_up, down = moe_checkpoint(e, inter, hidden, dtype, compress, seed=10)
    assert (".weight.nested_absmax" in " ".join(state)) == compress
    st = ck.read_bitsandbytes(state, names(e, "gate_proj", "up_proj"))
    assert st.shape == (e, 2 * inter, hidden) and st.dtype == dtype and not st.nested
    assert torch.equal(ck.dequantize_quant_state(st).view(torch.int16), gate_up.view(torch.int16))
    st = ck.read_bitsandbytes(state, [f"mlp.experts.{i}.down_proj.weight" for i in range(e)])
    assert st.shape == (e, hidden, inter)
    assert torch.equal(ck.dequantize_quant_state(st).view(torch.int16), down.view(torch.int16))


def test_moe_checkpoint_through_safetensors(tmp_path):
    """The same after a safetensors round trip, as a checkpoint on disk is read."""
    if os.environ.get("CHORD_REQUIRE_BNB") == "1":  # CI installs safetensors with bitsandbytes
        import safetensors.torch as safetensors
    else:
        safetensors = pytest.importorskip("safetensors.torch", reason="safetensors is not installed")
    state, gate_up, _ = moe_checkpoint(2, 64, 128, torch.bfloat16, True, seed=20)
    path = tmp_path / "experts.safetensors"
    safetensors.save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    st = ck.read_bitsandbytes(safetensors.load_file(str(path)), names(2, "gate_proj", "up_proj"))
    assert torch.equal(ck.dequantize_quant_state(st).view(torch.int16), gate_up.view(torch.int16))


def test_moe_checkpoint_refusals():
    """Each problem is named, before anything is packed."""
    state, _, _ = moe_checkpoint(2, 64, 128, torch.bfloat16, True, seed=30)
    gate = "mlp.experts.0.gate_proj.weight"

    def read(sd, n=None):
        return ck.read_bitsandbytes(sd, n or names(2, "gate_proj", "up_proj"))

    with pytest.raises(ValueError, match="'mlp.experts.0.gate_proj.weight.absmax' is missing"):
        read({k: v for k, v in state.items() if k != gate + ".absmax"})
    with pytest.raises(ValueError, match="is missing .is '.*' a bitsandbytes 4-bit weight"):
        read({k: v for k, v in state.items() if "quant_state" not in k or not k.startswith(gate)})
    fp4 = {(k.replace("__nf4", "__fp4") if k.startswith(gate) else k): v for k, v in state.items()}
    with pytest.raises(NotImplementedError, match="stored as quant_type fp4; only nf4"):
        read(fp4)
    table = dict(state)
    table[gate + ".quant_map"] = state[gate + ".quant_map"].flip(0)
    with pytest.raises(ValueError, match="not the NF4 code table"):
        read(table)
    short = dict(state)
    short[gate] = state[gate][:-1]
    with pytest.raises(ValueError, match="must hold 4096 contiguous bytes"):
        read(short)
    with pytest.raises(ValueError, match="expert 1 is \\[64, 128\\], expert 0 is \\[128, 128\\]"):
        read(state, [names(2, "gate_proj", "up_proj")[0], ("mlp.experts.1.gate_proj.weight",)])
    with pytest.raises(ValueError, match="different K"):
        read(state, [("mlp.experts.0.gate_proj.weight", "mlp.experts.0.down_proj.weight")])
    with pytest.raises(TypeError, match="one entry per expert"):
        read(state, "mlp.experts.0.gate_proj.weight")
    with pytest.raises(TypeError, match=r"names\[0\] must be a weight name or a non-empty list / tuple"):
        read(state, [{"mlp.experts.0.gate_proj.weight", "mlp.experts.0.up_proj.weight"}])  # a set has no order
    with pytest.raises(ValueError, match="'mlp.experts.0.gate_proj.weight' is named twice"):
        read(state, [("mlp.experts.0.gate_proj.weight", "mlp.experts.0.gate_proj.weight")])
    with pytest.raises(TypeError, match="'state_dict' must be a mapping"):
        ck.read_bitsandbytes(list(state.items()), names(2, "gate_proj", "up_proj"))
    no_nested = {k: v for k, v in state.items() if k != gate + ".nested_absmax"}
    with pytest.raises(ValueError, match="'mlp.experts.0.gate_proj.weight.nested_absmax' is missing"):
        read(no_nested)

    def with_meta(**changes):
        sd = dict(state)
        key = gate + ".quant_state.bitsandbytes__nf4"
        meta = json.loads(bytes(sd[key].tolist()).decode())
        meta.update(changes)
        sd[key] = torch.tensor(list(json.dumps(meta).encode()), dtype=torch.uint8)
        return sd

    with pytest.raises(NotImplementedError, match="blocksize 128"):
        read(with_meta(blocksize=128))
    with pytest.raises(NotImplementedError, match="dtype 'int8'"):
        read(with_meta(dtype="int8"))
    with pytest.raises(ValueError, match="2-D weight"):
        read(with_meta(shape=[2, 64, 128]))
    with pytest.raises(ValueError, match="malformed: nested_offset '0.1' is not a int or float"):
        read(with_meta(nested_offset="0.1"))
    for bad in (float("nan"), float("inf"), 1e39, 10 ** 400):
        with pytest.raises(ValueError, match="is not a finite FP32 number"):
            read(with_meta(nested_offset=bad))
    with pytest.raises(ValueError, match="malformed: blocksize '64' is not a int"):
        read(with_meta(blocksize="64"))
    with pytest.raises(ValueError, match="2-D weight"):
        read(with_meta(shape=[True, 8192]))
    plain_meta = dict(state)
    key = gate + ".quant_state.bitsandbytes__nf4"
    meta = {k: v for k, v in json.loads(bytes(state[key].tolist()).decode()).items() if not k.startswith("nested")}
    plain_meta[key] = torch.tensor(list(json.dumps(meta).encode()), dtype=torch.uint8)
    with pytest.raises(ValueError, match="nested_absmax' is there but the quant state .* has no nested fields"):
        read(plain_meta)
    deep = dict(state)
    deep[gate + ".quant_state.bitsandbytes__nf4"] = torch.tensor(list(b"[" * 100000), dtype=torch.uint8)
    with pytest.raises(ValueError, match="is not UTF-8 JSON"):
        read(deep)
