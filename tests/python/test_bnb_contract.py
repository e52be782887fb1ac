"""CPU: the installed bitsandbytes against chord's NF4 reader and quantizer. A QuantState
that bitsandbytes' own quantize_4bit makes (blocksize 64, FP32 absmax or double-quantized)
is read by NF4Weights.from_quant_state into the state chord packs, and that state's
dequantization equals bitsandbytes' dequantize_4bit bit for bit; chord's quantize_nf4 makes
the same codes and statistics, but for two corners where bitsandbytes' CPU backend and its
CUDA kernel disagree. Runs on bitsandbytes' CPU backend; the GPU tests compare chord's
CUDA operators with this reference.

Skips when bitsandbytes is not installed, unless CHORD_REQUIRE_BNB=1 (CI's step that
installs it sets it)."""
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


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("compress", [False, True])
def test_quantize_nf4_equals_bitsandbytes(compress, dtype):
    """chord's quantizer follows bitsandbytes' CUDA kernel. Its CPU backend, run here,
    differs in two corners, and nowhere else:
    - an all-zero block: CUDA scales by 1 / 0 and codes the NaN as code 0 (-1.0), the CPU
      backend codes 0.0 (code 7); both dequantize to zero;
    - the double-quantized absmax: where the 8-bit value sits almost exactly between two
      codes, the CPU backend may take the other one; chord's is the nearer of the two."""
    w = experts(2, 64, 512, dtype, seed=4)
    packed, qs = bnb.functional.quantize_4bit(w, blocksize=64, compress_statistics=compress, quant_type="nf4")
    mine = ck.quantize_nf4(w, double_quant=compress)

    theirs = packed.reshape(-1)
    zero_block = (w.reshape(-1, 64) == 0).all(1).repeat_interleave(32)
    assert zero_block.any()
    assert torch.equal(mine.packed[~zero_block], theirs[~zero_block])
    assert (mine.packed[zero_block] == 0x00).all() and (theirs[zero_block] == 0x77).all()

    if not compress:
        assert torch.equal(mine.absmax, qs.absmax)
        return
    assert torch.equal(mine.nested_absmax, qs.state2.absmax)
    assert torch.equal(mine.nested_code, qs.state2.code)
    assert float(mine.offset) == float(qs.offset)
    raw = ck.quantize_nf4(w, double_quant=False).absmax
    scale = qs.state2.absmax.repeat_interleave(256)[:raw.numel()]
    exact = (raw - float(qs.offset)) / scale  # the value the 8-bit code stands for
    code = qs.state2.code
    differ = (mine.absmax != qs.absmax).nonzero().flatten()
    assert differ.numel() <= 2
    for i in differ.tolist():
        a, b = int(mine.absmax[i]), int(qs.absmax[i])
        assert abs(a - b) == 1
        ours, other = abs(float(code[a] - exact[i])), abs(float(code[b] - exact[i]))
        assert ours <= other and other - ours < 0.02 * abs(float(code[a] - code[b]))
