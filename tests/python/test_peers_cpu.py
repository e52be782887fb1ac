"""bench/peers.py's import isolation, with fake packages (no GPU, no torch, no real peer):
the peer named `humming` loads from its own folder, its lazy imports inside a call resolve to
its own modules, and `import humming` outside a peer call still gives our facade."""
import importlib
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import peers  # noqa: E402

SUBMODULES = ("dtypes", "config", "schema", "transform", "tune", "forward", "ops")


def write_package(root, backend, lazy=False):
    pkg = root / "humming"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"BACKEND = {backend!r}\n")
    for name in SUBMODULES:
        (pkg / f"{name}.py").write_text(f"WHO = {backend!r}\n")
    if lazy:  # a function-level import of a submodule our facade lacks, as the real package does
        (pkg / "kernel.py").write_text(f"WHO = {backend!r}\n")
        (pkg / "forward.py").write_text(
            f"WHO = {backend!r}\n"
            "def humming_forward():\n"
            "    import humming\n"
            "    from humming import kernel\n"
            "    return humming.BACKEND, kernel.WHO\n")
    return root


@pytest.fixture
def clean_humming(tmp_path, monkeypatch):
    """Our facade stand-in on sys.path (fake `ours/humming`, BACKEND "chord"), with whatever
    `humming` modules the session had moved aside and restored afterwards."""
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "humming" or n.startswith("humming.")}
    ours = write_package(tmp_path / "ours", "chord")
    monkeypatch.syspath_prepend(str(ours))
    importlib.invalidate_caches()
    try:
        yield tmp_path
    finally:
        for n in [n for n in sys.modules if n == "humming" or n.startswith("humming.")]:
            del sys.modules[n]
        sys.modules.update(saved)
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]


def test_peer_loads_from_its_folder_and_facade_stays(clean_humming):
    import humming as facade_before
    assert facade_before.BACKEND == "chord"
    site = write_package(clean_humming / "site", "peer", lazy=True)
    peer = peers.load_humming(str(site))
    assert peer.get("").BACKEND == "peer"
    assert peer.get("forward").WHO == "peer"
    assert peer.get("").__file__.startswith(str(site))
    # outside a peer call, `humming` is still our facade, the same module object
    import humming
    assert humming is facade_before and humming.BACKEND == "chord"
    import humming.forward
    assert humming.forward.WHO == "chord"
    # the site is after everything installed (fills gaps, shadows nothing)
    assert sys.path.index(str(site)) > sys.path.index(str(clean_humming / "ours"))
    # inside a call, the peer's function-level imports resolve to the peer, first with the full
    # swap and then with the hot one (calling), and the facade is back afterwards
    with peer:
        assert peer.get("forward").humming_forward() == ("peer", "peer")
    with peer.calling():
        assert peer.get("forward").humming_forward() == ("peer", "peer")
        assert sys.modules["humming"].BACKEND == "peer"
    assert sys.modules["humming"] is facade_before
    assert "humming.kernel" not in sys.modules  # the peer's lazily imported module went with it
    assert sys.modules["humming.forward"].WHO == "chord"


def test_peer_without_facade_leaves_no_humming(clean_humming, monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.startswith(str(clean_humming / "ours"))])
    site = write_package(clean_humming / "site", "peer")
    peer = peers.load_humming(str(site))
    assert peer.get("").BACKEND == "peer"
    assert not [n for n in sys.modules if n == "humming" or n.startswith("humming.")]


def test_missing_peer_names_the_script(clean_humming):
    with pytest.raises(peers.PeerMissing, match="scripts/peer-wheels.sh"):
        peers.load_humming(str(clean_humming / "empty"))
    import humming
    assert humming.BACKEND == "chord"


def test_facade_is_not_taken_for_the_peer(clean_humming):
    with pytest.raises(peers.PeerMissing, match="chord's humming facade"):
        peers.load_humming(str(clean_humming / "ours"))
    import humming
    assert humming.BACKEND == "chord"


def test_broken_peer_leaves_nothing_behind(clean_humming):
    site = write_package(clean_humming / "site", "peer")
    (site / "humming" / "tune.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(peers.PeerMissing, match="does not import"):
        peers.load_humming(str(site))
    import humming
    assert humming.BACKEND == "chord"
    assert not [n for n, m in sys.modules.items() if n.startswith("humming") and getattr(m, "WHO", "") == "peer"]


# -- --peers marlin: the parts a CPU checks (the GPU run checks the GEMM against the reference) --

def test_parse_peers():
    assert peers.parse_peers("marlin,humming") == ["marlin", "humming"]
    assert peers.parse_peers("humming,,marlin,humming") == ["humming", "marlin"]
    assert peers.parse_peers("") == []
    with pytest.raises(ValueError, match="unknown peer 'cutlass'.*humming, marlin"):
        peers.parse_peers("marlin,cutlass")


def test_missing_marlin_names_the_script(tmp_path, monkeypatch):
    monkeypatch.delenv("PEER_MARLIN", raising=False)
    with pytest.raises(peers.PeerMissing, match="no .*libvllm_marlin_moe_sm90a.so.*scripts/peer-marlin.sh"):
        peers.load_marlin(str(tmp_path / "libvllm_marlin_moe_sm90a.so"))
    monkeypatch.setenv("PEER_MARLIN", str(tmp_path / "elsewhere.so"))
    with pytest.raises(peers.PeerMissing, match="elsewhere.so.*scripts/peer-marlin.sh"):
        peers.load_peer("marlin")


def test_broken_marlin_library_is_missing(tmp_path):
    pytest.importorskip("torch")
    lib = tmp_path / "libvllm_marlin_moe_sm90a.so"
    lib.write_bytes(b"not an ELF file")
    with pytest.raises(peers.PeerMissing, match="does not load.*scripts/peer-marlin.sh"):
        peers.load_marlin(str(lib))


def test_uint4b8_id():
    # vLLM's scalar_types.uint4b8 (no exponent, 4 mantissa bits, unsigned, bias 8, NAN_IEEE): the
    # id in the names of the wheel's Marlin<> kernels for GPTQ INT4 (uint4 without bias: ...843648)
    assert peers.UINT4B8_ID == 1125899907892224
    assert peers.scalar_type_id(0, 4, False, 0) == 1125899906843648
    assert peers.UINT4B8_ID == (4 << 8) | (8 << 17) | (1 << 50)


def test_gptq_qweight_against_words_built_one_by_one():
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(7)
    n, k = 24, 64
    codes = torch.randint(0, 16, (n, k), dtype=torch.uint8, generator=gen)
    codes[0, :8] = 15  # a word with the top bit set (negative as int32)
    got = peers.gptq_qweight(codes)
    assert got.dtype == torch.int32 and got.shape == (k // 8, n)
    for row in range(k // 8):
        for col in range(n):
            word = 0
            for i in range(8):
                word |= int(codes[col, 8 * row + i]) << (4 * i)
            assert got[row, col].item() & 0xFFFFFFFF == word, (row, col)
    assert got[0, 0].item() == -1


def test_marlin_scales_against_the_index_list():
    torch = pytest.importorskip("torch")
    n, groups = 128, 6
    scales = torch.arange(n * groups, dtype=torch.float32).reshape(n, groups).to(torch.bfloat16)
    # the permutation written as an index list: position 8 i + j of each run of 64 takes i + 8 j
    perm = [i + 8 * j for i in range(8) for j in range(8)]
    by_k = scales.t().contiguous().flatten()
    want = torch.stack([by_k[64 * r + p] for r in range(by_k.numel() // 64) for p in perm]).reshape(groups, n)
    got = peers.marlin_scales(scales)
    assert got.shape == (groups, n) and got.is_contiguous()
    assert torch.equal(got, want)


def test_marlin_block_rule():
    # fused_marlin_moe: first block of 8, 16, 32, 48, 64 with M * top_k / E / block < 0.9
    assert peers.marlin_block_size(20, 8, 48) == 8        # 3.3 routes per expert
    assert peers.marlin_block_size(50, 8, 48) == 16       # 8.3: 8.3 / 8 >= 0.9, 8.3 / 16 < 0.9
    assert peers.marlin_block_size(1024, 8, 384) == 32    # 21.3
    assert peers.marlin_block_size(16384, 8, 384) == 64   # 341
    # EP: M scaled by local / global experts (rounded up) before the rule
    assert peers.marlin_block_size(1024, 8, 48, 384) == 32   # M 128: 21.3 per local expert
    assert peers.marlin_block_size(64, 8, 48, 384) == 8      # M 8: 1.3
    assert peers.marlin_block_size(100, 8, 48, 384) == 8     # M ceil(12.5) = 13: 2.2 / 8 < 0.9
