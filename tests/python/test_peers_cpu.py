"""bench/peers.py's import isolation, with fake packages (no GPU, no torch, no real peer):
the peer named `humming` loads from its own folder, its lazy imports inside a call resolve to
its own modules, and `import humming` outside a peer call still gives our facade. Also Marlin's
packing helpers, bench/peers_chart.py's table and chart, and the row order of the Marlin call on
offsets rows (a stand-in kernel on the CPU)."""
import importlib
import json
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


# -- bench/peers_chart.py: the chart and the Markdown table -----------------------------------

import peers_chart  # noqa: E402

CHART_ROWS = [
    # both peers ok: humming is the faster, 90 / 100
    dict(scenario="indexed EP8 decode", x=20, proj="gate_up", chord_us=90.0, check="ok",
         marlin_us=120.0, vs_marlin=1.333, marlin_check="ok", humming_us=100.0, vs_humming=1.111,
         humming_check="ok"),
    # marlin timed but wrong: the best peer is humming alone, 50 / 40
    dict(scenario="offsets Qwen3 INT4", x=1, proj="down", chord_us=50.0, check="ok",
         marlin_us=30.0, vs_marlin=0.6, marlin_check="FAIL", humming_us=40.0, vs_humming=0.8,
         humming_check="ok"),
    # marlin alone ran
    dict(scenario="contiguous EP8", x=64, proj="down", chord_us=200.0, check="ok",
         marlin_us=None, vs_marlin=None, marlin_check="not run", humming_us=250.0, vs_humming=1.25,
         humming_check="ok"),
    # no peer ran: left out of the table and the chart
    dict(scenario="offsets Qwen3 NF4", x=1, proj="gate_up", chord_us=10.0, check="ok",
         marlin_us=None, vs_marlin=None, marlin_check="not run", humming_us=None, vs_humming=None,
         humming_check="not run"),
]


def test_peers_table_by_hand():
    assert peers_chart.peer_names(CHART_ROWS) == ["marlin", "humming"]
    assert peers_chart.table(CHART_ROWS).splitlines() == [
        "| row | chord us | marlin us | humming us | chord/best peer |",
        "|---|---:|---:|---:|---:|",
        "| indexed EP8 decode 20 gate_up | 90.0 | 120.0 | 100.0 | 0.90 (humming) |",
        "| offsets Qwen3 INT4 1 down | 50.0 | 30.0 (wrong) | 40.0 | 1.25 (humming) |",
        "| contiguous EP8 64 down | 200.0 | not run | 250.0 | 0.80 (humming) |",
    ]


def test_peers_table_without_a_correct_peer():
    rows = [dict(scenario="s", x=1, proj="down", chord_us=5.0, marlin_us=4.0, marlin_check="FAIL")]
    assert peers_chart.table(rows).splitlines()[-1] == "| s 1 down | 5.0 | 4.0 (wrong) | - |"
    assert peers_chart.table([CHART_ROWS[-1]]).count("\n") == 1  # header only: no peer timed


def test_peers_chart_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "peers.png"
    meta = dict(gpu="NVIDIA H200", commit="abc1234")
    assert peers_chart.draw(CHART_ROWS, str(path), meta) == 3
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = tmp_path / "none.png"
    assert peers_chart.draw([CHART_ROWS[-1]], str(empty)) == 0 and not empty.exists()


def test_peers_chart_cli_markdown(tmp_path, capsys):
    bench_json = tmp_path / "bench.json"
    bench_json.write_text(json.dumps(dict(meta=dict(gpu="g", commit="c"), rows=CHART_ROWS)))
    assert peers_chart.main([str(bench_json), "--markdown"]) == 0
    assert capsys.readouterr().out.strip() == peers_chart.table(CHART_ROWS)


# -- bench_w4a16's marlin call on offsets rows: the row order, with a stand-in kernel ------------

def test_marlin_offsets_maps_rows_back():
    """Suite.marlin_offsets puts the expert-sorted rows in route order for the peer (top_k 1, the
    routing draw's ids) and takes its output back to chord's order: checked with a stand-in
    Marlin that computes out[route] = a[route] @ W[ids[route]]^T on the CPU."""
    torch = pytest.importorskip("torch")
    bench = pytest.importorskip("bench_w4a16")  # needs chord_kernels installed (CPU is enough)
    import types
    tokens, top_k, experts, n, k = 5, 3, 4, 6, 8
    gen = torch.Generator().manual_seed(0)
    topk_ids = torch.stack([torch.randperm(experts, generator=gen)[:top_k] for _ in range(tokens)]).to(torch.int32)
    routes, offsets, _ = bench.grouped_rows(topk_ids, torch.arange(experts, dtype=torch.int32), experts)
    weights = torch.randn(experts, n, k, generator=gen)
    a = torch.randn(routes.numel(), k, generator=gen)
    out = torch.full((routes.numel(), n), float("nan"))

    class StandIn:
        def align(self, ids, block, global_experts, expert_map=None):
            assert ids.shape == (tokens * top_k, 1) and global_experts == experts and expert_map is None
            return ids.flatten(), None, None

        def indexed(self, a_routes, out_routes, ids, experts_of_blocks, total, router, block, kernel_top_k, mul):
            assert kernel_top_k == 1 and not mul and router.shape == (tokens * top_k, 1)
            out_routes.copy_(torch.einsum("rk,rnk->rn", a_routes, weights[ids.long()]))

    counts = torch.diff(offsets.long(), prepend=torch.zeros(1, dtype=torch.long))
    expert_of_row = torch.repeat_interleave(torch.arange(experts), counts)  # offsets: rows sorted by expert
    ref = torch.einsum("rk,rnk->rn", a, weights[expert_of_row])

    def check(got):
        return torch.allclose(got, ref, atol=1e-5), 0.0

    w = types.SimpleNamespace(marlin=StandIn(), experts=experts)
    fn, peer_check, extra = bench.Suite.marlin_offsets(w, a, out, routes, topk_ids, tokens, top_k, check)()
    fn()
    assert peer_check() == (True, 0.0)
    assert extra == dict(block=8)  # 5 * 3 / 4 / 8 < 0.9
    assert bench.Suite.marlin_offsets(types.SimpleNamespace(marlin=None), a, out, routes, topk_ids, tokens, top_k,
                                      check) is None


# -- --peers with --set generalization: argument handling, the rows' peer fields (fake peers) ----

def test_marlin_unserved_is_vllms_layer_rule():
    assert peers.marlin_unserved(7168, 2048) is None      # Kimi / DeepSeek-V3
    assert peers.marlin_unserved(4096, 192) is None       # Qwen3-235B TP8: intermediate % 64 is enough
    why = peers.marlin_unserved(2880, 2880)               # gpt-oss-120b: hidden 2880 % 128 = 64
    assert "check_moe_marlin_supports_layer" in why and "hidden 2880" in why and "intermediate" not in why
    assert "intermediate 96 % 64" in peers.marlin_unserved(4096, 96)
    assert "group 16" in peers.marlin_unserved(4096, 2048, group_size=16)


def test_capacity_option_sizes_sorted_ids_as_vllm_does():
    bench = pytest.importorskip("bench_w4a16")  # needs chord_kernels installed (CPU is enough)
    assert bench.parse_args([]).capacity == "tight"
    assert "--capacity" not in bench.command_line(bench.parse_args([]))
    assert "--capacity vllm" in bench.command_line(bench.parse_args(["--capacity", "vllm"]))
    saved = bench.CAPACITY
    try:
        bench.apply_options(bench.parse_args(["--set", "generalization", "--capacity", "vllm"]))
        assert bench.CAPACITY == "vllm"  # what main() sets before any row is built
        bench.CAPACITY = "tight"
        assert bench.routing_capacity(8, 48, 16, 128, 2) == 160        # padded + 2 blocks
        bench.CAPACITY = "vllm"
        assert bench.routing_capacity(8, 48, 16, 128, 2) == 128        # fewer routes than experts
        assert bench.routing_capacity(160, 48, 16, 400, 2) == 160 + 48 * 15
        assert bench.routing_capacity(512, 32, 64, 2048, 2) == 512 + 32 * 63
    finally:
        bench.CAPACITY = saved


def test_command_line_records_library_paths_relative_to_the_repository():
    bench = pytest.importorskip("bench_w4a16")  # needs chord_kernels installed (CPU is enough)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(bench.__file__)))
    inside = os.path.join(repo, ".clean_base", "build", "libchord.so")
    line = bench.command_line(bench.parse_args(["--against", inside, "--library", "/opt/other/libchord.so"]))
    assert "--against .clean_base/build/libchord.so" in line and repo not in line
    assert "--library /opt/other/libchord.so" in line  # outside the repository: as given


def test_parse_args_peers_with_the_sets():
    bench = pytest.importorskip("bench_w4a16")  # needs chord_kernels installed (CPU is enough)
    args = bench.parse_args(["--set", "generalization", "--peers", "marlin,humming", "--only", "dsv3,q235"])
    assert args.peers == ["marlin", "humming"] and args.reps == 50 and args.only == "dsv3,q235"
    assert "--set generalization --reps 50 --only dsv3,q235 --peers marlin,humming" in bench.command_line(args)
    assert bench.parse_args(["--peers", "humming"]).peers == ["humming"]
    assert bench.parse_args(["--set", "generalization"]).peers is None
    for bad in (["--set", "formats", "--peers", "marlin"], ["--set", "generalization", "--peers", "cutlass"],
                ["--set", "formats", "--interleaved"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
    # The formats set takes --against (a before / after of FP16 and zero-point kernels).
    args = bench.parse_args(["--set", "formats", "--against", "/opt/other/libchord.so"])
    assert args.against == "/opt/other/libchord.so" and args.reps == 100


ROW_KEYS = ["model", "split", "scenario", "mode", "weight", "draw", "x", "proj", "n", "k", "experts", "routed_rows",
            "active_experts", "config", "config_source", "kernel", "ran_kernel", "chord_us", "floor_us", "floor_bytes",
            "pct_floor", "check", "rel_error", "first_call_ms"]


def _generalization_rows(monkeypatch, names, make_peer):
    """generalization_row over the quick calls of three splits (Marlin-served, gpt-oss: refused by
    vLLM's layer rule, and one with masked rows) and an NF4 one, with a fake chord call and fake
    peers (make_peer(name, call) -> the peer's call for try_peers); the timer gives chord 10 us
    and each peer 10 us more than the last. Returns (rows, the function lists the timer got)."""
    bench = pytest.importorskip("bench_w4a16")
    import generalization
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(bench.ck, "last_w4a16_kernel", lambda library=None: "w4a16_ran")
    calls = generalization.calls(quick=True, only="minimax_ep8,gptoss_tp1 indexed uniform,phi35_tp2 offsets")
    timed = []

    def timer(fns, late=None):
        timed.append(list(fns))
        if late is not None:  # the peers' calls queued late in every rep, chord's never
            late[:] = [0.0] + [1.0] * (len(fns) - 1)
        return [10.0 * (i + 1) for i in range(len(fns))]

    rows = []
    for call in calls:
        call["config"] = dict(engine="mma_sync", block_m="16", block_n="128", block_k="128", stages="3",
                              warps_m="1", warps_n="4", source="heuristic", kernel="k")
        peer_calls = {}
        for name in names:
            note = generalization.peer_note(call, name)
            peer_calls[name] = make_peer(name, call) if note is None else note
        row, ok, _ = bench.generalization_row(call, lambda: None, lambda: (True, 1e-3), timer, names, peer_calls)
        assert ok
        rows.append(row)
    return rows, timed


def test_last_kernel_of_a_build_without_the_entry_point_is_none(monkeypatch):
    # An older --library build lacks chord_w4a16_last_kernel: the binding raises
    # NotImplementedError when it is called; the row records None and the run goes on.
    bench = pytest.importorskip("bench_w4a16")

    def missing(library=None):
        raise NotImplementedError("chord: libchord.so has no chord_w4a16_last_kernel")

    monkeypatch.setattr(bench.ck, "last_w4a16_kernel", missing)
    assert bench.last_kernel() is None
    monkeypatch.setattr(bench.ck, "last_w4a16_kernel", lambda library=None: "w4a16_x")
    assert bench.last_kernel() == "w4a16_x"


def test_generalization_rows_without_peers_are_unchanged(monkeypatch, capsys):
    rows, timed = _generalization_rows(monkeypatch, [], None)
    assert rows and all(list(r) == ROW_KEYS for r in rows)
    # The kernel the library says served the call's first run (patched in _generalization_rows).
    assert all(r["ran_kernel"] == "w4a16_ran" for r in rows)
    assert all(len(fns) == 1 for fns in timed)  # chord alone: time_us's call
    assert "not run" not in capsys.readouterr().out


def test_generalization_rows_with_against_time_both_builds_rep_by_rep(monkeypatch):
    # --against rides along as the peer "against" on every call (run_generalization gives it no
    # peer_note): timed in the same timer call as ours, checked, never counted as a peer.
    bench = pytest.importorskip("bench_w4a16")
    import generalization
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda *a: None)
    timed, rows = [], []

    def timer(fns, late=None):
        timed.append(list(fns))
        return [10.0 * (i + 1) for i in range(len(fns))]

    for call in generalization.calls(quick=True, only="minimax_ep8,phi35_tp2 offsets"):
        call["config"] = dict(engine="mma_sync", block_m="16", block_n="128", block_k="128", stages="3",
                              warps_m="1", warps_n="4", source="heuristic", kernel="k")
        wrong = call["x"] == 64
        make = lambda wrong=wrong: ((lambda: None), (lambda: (not wrong, 0.5 if wrong else 1e-4)), {})  # noqa: E731
        row, ok, _ = bench.generalization_row(call, lambda: None, lambda: (True, 1e-3), timer, ["against"],
                                              {"against": make})
        assert ok
        rows.append(row)
    assert rows and any(r["x"] == 64 for r in rows)
    for row, fns in zip(rows, timed):
        assert len(fns) == 2  # ours and the other build, one timer call: one clock
        assert row["against_us"] == 20.0 and row["vs_against"] == 2.0  # its time / ours
        assert row["against_check"] == ("FAIL" if row["x"] == 64 else "ok")
    text = bench.generalization_summary(rows)
    assert f"min 2.000 / median 2.000 / max 2.000 over {len(rows)} calls" in text
    assert "peers (" not in text  # the other build is not a peer


def test_generalization_rows_gain_the_peer_fields(monkeypatch):
    def make_peer(name, call):
        def make():
            if name == "humming" and call["x"] == 8 and call["proj"] == "down":
                raise RuntimeError("no kernel for this shape\nsecond line")
            wrong = name == "marlin" and call["x"] == 64
            return (lambda: None), (lambda: (not wrong, 0.5 if wrong else 1e-4)), dict(block=8)
        return make

    rows, timed = _generalization_rows(monkeypatch, ["marlin", "humming"], make_peer)
    modes = {(r["scenario"].split()[0], r["mode"]) for r in rows}
    assert {("minimax_ep8", "indexed"), ("minimax_ep8", "masked"), ("gptoss_tp1", "indexed"),
            ("phi35_tp2", "offsets")} <= modes
    for row, fns in zip(rows, timed):
        assert list(row)[:len(ROW_KEYS)] == ROW_KEYS
        for name in ("marlin", "humming"):
            assert {f"{name}_us", f"vs_{name}", f"{name}_check"} <= set(row)
        served = [n for n in ("marlin", "humming") if row[f"{n}_us"] is not None]
        assert len(fns) == 1 + len(served)  # chord, then each peer timed, rep by rep (one timer call)
        if row["mode"] != "indexed":  # masked, offsets NF4: no peer, no note
            assert row["marlin_check"] == row["humming_check"] == "not run" and not served
            assert "marlin_note" not in row and "humming_note" not in row
            continue
        if row["split"] == "gptoss_tp1":  # vLLM would not run Marlin on this layer: 'not run', saying why
            assert row["marlin_check"] == "not run" and "hidden 2880 % 128" in row["marlin_note"]
        else:
            assert row["marlin_us"] == 20.0 and row["vs_marlin"] == 2.0 and row["marlin_block"] == 8
            assert row["marlin_check"] == ("FAIL" if row["x"] == 64 else "ok")
        if row["x"] == 8 and row["proj"] == "down":
            assert row["humming_check"] == "ERROR: RuntimeError: no kernel for this shape"
            assert row["humming_us"] is None and row["vs_humming"] is None
        else:
            assert row["humming_check"] == "ok" and row["humming_us"] == 10.0 * len(fns)
        # the timer's late fractions: each timed peer's, and ours where some peer was timed
        for name in ("marlin", "humming"):
            assert row.get(f"{name}_host_late") == (1.0 if name in served else None)
        assert row.get("host_late") == (0.0 if served else None)
    # the chart, the table and the summary read these rows as they read the suite's
    assert peers_chart.peer_names(rows) == ["marlin", "humming"]
    ran = peers_chart.timed_rows(rows)
    assert ran == [r for r in rows if r["mode"] == "indexed"]
    text = peers_chart.table(rows)
    assert "| gptoss_tp1 indexed uniform 8 down | 10.0 | not run | error | - |" in text
    # the timer had every peer's call queued late: their times are marked host-bound, ours not
    assert "| minimax_ep8 indexed uniform 64 gate_up | 10.0 | 20.0 (wrong) (host) | 30.0 (host) | 0.33 (humming) |" in text
    summary = peers_chart.summary(rows)
    assert "rows above 0.9" in summary and "error: gptoss_tp1 indexed uniform 8 down: ERROR" in summary
    marlin_ok = sum(1 for r in rows if r.get("marlin_check") == "ok")
    assert f"; {marlin_ok} host-bound" in summary.splitlines()[0]  # every ok row's calls were late
    # the table marks the peers' host-bound times, not ours (host_late 0.0)
    rows[0].update(marlin_host_late=0.9, humming_host_late=0.5, host_late=0.0)
    marked = peers_chart.table([rows[0]]).splitlines()[-1]
    assert marked.count("(host)") == (1 if rows[0]["marlin_us"] is not None else 0)
    rows[0]["host_late"] = 0.75
    assert peers_chart.table([rows[0]]).splitlines()[-1].split(" | ")[1].endswith("(host)")


def test_time_interleaved_reports_calls_queued_after_the_start(monkeypatch):
    """time_interleaved_us: medians per function from the events' spans, the functions' reps
    interleaved, and `late`: the fraction of each function's reps in which its start event had
    already completed (the GPU waiting for the host) once the call and its end were queued."""
    bench = pytest.importorskip("bench_w4a16")
    spans = [[5.0, 1.0, 3.0, 2.0], [40.0, 10.0, 20.0, 30.0]]  # us, per function and rep
    reached = [[False] * 4, [True, False, True, True]]
    recorded, queued = [], []

    class Event:  # the k-th event recorded is the start (k even) or end of pair k // 2
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.k = None

        def where(self):
            pair = self.k // 2
            return pair % 2, pair // 2  # function, rep (two functions)

        def record(self):
            self.k = len(recorded)
            recorded.append(self)

        def query(self):
            assert self.k % 2 == 0 and len(recorded) == self.k + 2  # the start, after the end was queued
            fn, rep = self.where()
            return reached[fn][rep]

        def elapsed_time(self, end):  # ms
            assert end.k == self.k + 1
            fn, rep = self.where()
            return spans[fn][rep] / 1000.0

    def make(j):
        def fn():
            queued.append((j, len(recorded)))
        return fn

    monkeypatch.setattr(bench.torch.cuda, "Event", Event)
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(bench, "flush_l2", lambda flush: None)
    late = []
    medians = bench.time_interleaved_us([make(0), make(1)], None, reps=4, warmup=2, late=late)
    assert [j for j, _ in queued] == [0, 1] * 6  # two warm-up rounds, then rep by rep
    assert all(n % 2 == 1 for _, n in queued[4:])  # each timed call between its start and end
    assert medians == pytest.approx([3.0, 30.0])  # the upper median of four
    assert late == [0.0, 0.75]
    recorded.clear()
    assert bench.time_interleaved_us([make(0), make(1)], None, reps=4, warmup=0) == pytest.approx([3.0, 30.0])


def test_peer_layout_errors_reach_the_rows():
    bench = pytest.importorskip("bench_w4a16")
    import types
    w = types.SimpleNamespace(humming=None, marlin=None, peer_errors={"marlin": ValueError("bad shape")},
                              experts=4)
    assert bench.humming_indexed(w, None, None, None, None, 1, 1, None) is None  # not converted: not run
    make = bench.marlin_indexed(w, None, None, None, 1, 1, 4, None, 1, False, None)
    fields, timed, failed = bench.try_peers(["marlin", "humming"], dict(marlin=make, humming=None))
    assert fields["marlin_check"] == "ERROR: ValueError: bad shape" and fields["marlin_us"] is None
    assert fields["humming_check"] == "not run" and timed == [] and failed == 1


MANY_ROWS = [dict(scenario=f"m{i % 15} indexed uniform", x=2 ** (i % 7), proj="down", chord_us=10.0 + i,
                  marlin_us=12.0, marlin_check="ok", humming_us=None, humming_check="ERROR: RuntimeError: x")
             for i in range(420)]  # the generalization set's indexed rows: Humming raised on every one


def test_peers_chart_on_many_rows(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "peers.png"
    assert peers_chart.draw(MANY_ROWS, str(path), dict(gpu="g", commit="c")) == 420
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_peers_summary_on_many_rows():
    rows = MANY_ROWS
    summary = peers_chart.summary(rows, worst=3).splitlines()
    assert summary[0].startswith("marlin: 420 rows ok, 0 wrong, 0 raised, 0 not run; chord / marlin min")
    assert summary[0].endswith(f"{sum(1 for r in rows if r['chord_us'] / 12.0 > 0.9)} rows above 0.9")
    assert summary[1] == "  35.750  m14 indexed uniform 64 down: chord 429.0 us, marlin 12.0 us"  # highest first
    assert "humming: 0 rows ok, 0 wrong, 420 raised, 0 not run" in summary
    assert summary[-1] == "  ... and 417 more wrong or raised"


# -- a run cut short by `timeout` keeps its rows -------------------------------------------------

def test_sigterm_keeps_the_rows_done():
    """SIGTERM during a run raises Stopped (stop_on_sigterm); run_rows_until_stopped returns the
    finished rows' failed checks and marks meta partial, the rows appended so far intact."""
    import signal
    bench = pytest.importorskip("bench_w4a16")
    previous = signal.getsignal(signal.SIGTERM)
    bench.stop_on_sigterm()
    try:
        def run_rows(rows):
            rows.append(dict(scenario="a", check="ok"))
            rows.append(dict(scenario="b", check="FAIL"))
            os.kill(os.getpid(), signal.SIGTERM)
            rows.append(dict(scenario="never", check="ok"))
            return 0

        meta, rows = {}, []
        assert bench.run_rows_until_stopped(meta, run_rows, rows) == 1
        assert [r["scenario"] for r in rows] == ["a", "b"]
        assert meta["partial"] == "stopped by SIGTERM after 2 rows"
        # A run that finishes returns its own count and leaves meta alone.
        meta, rows = {}, []
        assert bench.run_rows_until_stopped(meta, lambda out: out.append(dict(check="ok")) or 7, rows) == 7
        assert meta == {} and len(rows) == 1
        # A signal inside a peer's call stops the run too: the bench records a raising peer as a
        # result (`except Exception`), and that handler must not take the stop for a failure.
        def run_rows_with_peer(rows):
            rows.append(dict(scenario="a", check="ok"))
            try:
                os.kill(os.getpid(), signal.SIGTERM)  # lands inside the peer's call
            except Exception:  # noqa: BLE001 - as the bench's peer handlers do
                rows.append(dict(scenario="peer failed", check="ok"))
            rows.append(dict(scenario="never", check="ok"))
            return 0

        meta, rows = {}, []
        assert bench.run_rows_until_stopped(meta, run_rows_with_peer, rows) == 0
        assert [r["scenario"] for r in rows] == ["a"]
        assert meta["partial"] == "stopped by SIGTERM after 1 rows"
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_count_peer_failures():
    """A wrong or raised peer check counts; ok, not run and a peer the row lacks do not."""
    bench = pytest.importorskip("bench_w4a16")
    rows = [dict(marlin_check="ok", humming_check="wrong"),
            dict(marlin_check="ERROR: ValueError: x", humming_check="not run"),
            dict(marlin_check="not run")]
    assert bench.count_peer_failures(rows, ["marlin", "humming"]) == 2
    assert bench.count_peer_failures(rows, ["marlin"]) == 1
    assert bench.count_peer_failures(rows, []) == 0


def test_generalization_summary_medians_of_even_counts():
    bench = pytest.importorskip("bench_w4a16")  # needs chord_kernels installed (CPU is enough)
    rows = [dict(scenario="s", proj="down", pct_floor=p, vs_against=v, x=1, n=16, k=64, routed_rows=1,
                 active_experts=1, chord_us=1.0, floor_us=0.5, config="c", config_source="heuristic")
            for p, v in ((40.0, 1.0), (50.0, 2.0), (60.0, 3.0), (70.0, 4.0))]
    text = bench.generalization_summary(rows)
    assert "40.0 /  55.0 /  70.0" in text  # the mean of the two middle values, not the upper one
    assert "min 1.000 / median 2.500 / max 4.000 over 4 calls" in text
