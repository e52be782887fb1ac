"""The formats set (bench/formats.py; `bench/bench_w4a16.py --set formats` times it), without a
GPU: its rows follow the suite's Qwen3-30B-A3B and EP8 splits, and its two read floors count the
bytes of the checkpoint format and of chord's packed layout, checked against hand-computed
numbers and against the library's own size helpers."""
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import formats  # noqa: E402
import shapes  # noqa: E402


def test_expert_bytes_by_hand():
    # One 256 x 512 expert: 65536 bytes of 4-bit codes.
    n, k = 256, 512
    # checkpoint: group 32 -> 16 scales a row; group 128 -> 4 scales a row (2 bytes each) and
    # 4 zero points a row (4 bits each)
    assert formats.expert_bytes(n, k, 32, False, "checkpoint") == 65536 + 256 * 16 * 2 == 73728
    assert formats.expert_bytes(n, k, 128, False, "checkpoint") == 65536 + 256 * 4 * 2 == 67584
    assert formats.expert_bytes(n, k, 128, True, "checkpoint") == 65536 + 256 * 4 * 2 + 256 * 4 // 2 == 68096
    # chord: one 2-byte scale per 32, or per 128 for group 128 (the group-128 formats); with zero
    # points a 4-byte {scale, bias}
    assert formats.expert_bytes(n, k, 32, False, "chord") == 73728
    assert formats.expert_bytes(n, k, 32, True, "chord") == 65536 + 256 * 16 * 4 == 81920
    assert formats.expert_bytes(n, k, 64, False, "chord") == 73728  # group 64: repeated per 32
    assert formats.expert_bytes(n, k, 128, False, "chord") == 65536 + 256 * 4 * 2 == 67584
    assert formats.expert_bytes(n, k, 128, True, "chord") == 65536 + 256 * 4 * 4 == 69632
    with pytest.raises(ValueError):
        formats.expert_bytes(n, k, 48, False, "chord")
    with pytest.raises(ValueError):
        formats.expert_bytes(n, 320, 128, False, "checkpoint")


def test_expert_bytes_of_the_qwen3_gate_up():
    n, k = shapes.SPLITS["qwen3"]["gate_up"]["n"], shapes.SPLITS["qwen3"]["gate_up"]["k"]
    assert (n, k) == (1536, 2048)
    assert formats.expert_bytes(n, k, 128, True, "checkpoint") == 1572864 + 49152 + 12288
    assert formats.expert_bytes(n, k, 128, False, "chord") == 1572864 + 49152
    assert formats.expert_bytes(n, k, 128, True, "chord") == 1572864 + 98304


def test_chord_bytes_are_what_the_library_allocates():
    ck = pytest.importorskip("chord_kernels")
    native = ck._lib
    for e, n, k in ((1, 256, 512), (3, 1536, 2048), (2, 7168, 2048)):
        for zp in (False, True):
            scales = native.zp_scale_bytes(e, n, k) if zp else native.scale_bytes(e, n, k)
            assert native.weight_bytes(e, n, k) + scales == e * formats.expert_bytes(n, k, 32, zp, "chord")
            fmt = ck.FORMAT_INT4_G128_ZP if zp else ck.FORMAT_INT4_G128
            assert native.weight_bytes(e, n, k) + native.format_scale_bytes(fmt, e, n, k) == \
                e * formats.expert_bytes(n, k, 128, zp, "chord")


def test_geometry_and_floors_by_hand():
    # 8 global experts, the first 4 on this GPU, top_k 2: token 0 -> 0 (5 elsewhere),
    # token 1 -> 1, 0; token 2 -> elsewhere only. 3 routes on experts 0 and 1; 2 tokens read.
    topk_ids = [[0, 5], [1, 0], [6, 7]]
    n, k = 256, 512
    up = formats.geometry(topk_ids, 4, 2, "gate_up", n, k)
    assert (up["routed_rows"], up["active_experts"], up["rows_read"]) == (3, 2, 2)
    assert (up["a_rows"], up["kernel_top_k"], up["counts"]) == (3, 2, [2, 1, 0, 0])
    assert up["act_bytes"] == (2 * 512 + 3 * 256) * 2 == 3584
    assert up["flop"] == 2 * 3 * 256 * 512
    zp = up["variants"]["g128-zp"]
    assert zp["checkpoint_bytes"] == 2 * 68096 + 3584
    assert zp["read_bytes"] == 2 * 69632 + 3584  # group 128: one {scale, bias} per 128
    assert zp["floor_us"] == pytest.approx((2 * 68096 + 3584) / 4.47e12 * 1e6)
    assert zp["floor_read_us"] == pytest.approx((2 * 69632 + 3584) / 4.47e12 * 1e6)
    assert up["variants"]["g128"]["read_bytes"] == 2 * 67584 + 3584
    assert up["variants"]["g32"]["checkpoint_bytes"] == up["variants"]["g32"]["read_bytes"] == 2 * 73728 + 3584
    assert up["variants"]["g128-fp16"]["checkpoint_bytes"] == 2 * 67584 + 3584
    down = formats.geometry(topk_ids, 4, 2, "down", n, k)
    assert (down["rows_read"], down["a_rows"], down["kernel_top_k"]) == (3, 6, 1)
    assert down["act_bytes"] == (3 * 512 + 3 * 256) * 2
    # a compute-bound call: the floor is the FLOP at the dense BF16 rate
    big = formats.geometry([[0]] * 4096, 1, 1, "down", 4096, 4096)
    assert big["variants"]["g32"]["floor_us"] == pytest.approx(2 * 4096 ** 3 / 790e12 * 1e6)


def test_rows_cover_qwen3_and_ep8():
    cases = formats.cases()
    assert cases == formats.cases()  # seeded per row: reproducible
    got = {(c["scenario"], c["x"]) for c in cases}
    assert got == {("formats Qwen3 decode", 1), ("formats Qwen3 decode", 8), ("formats Qwen3 decode", 64),
                   ("formats EP8 decode", 20), ("formats Qwen3 prefill", 4096), ("formats EP8 prefill", 8192)}
    assert [c["phase"] for c in cases] == sorted((c["phase"] for c in cases), key=["decode", "prefill"].index)
    assert {(v["group_size"], v["zero_point"], v["dtype"]) for v in formats.VARIANTS} == {
        (32, False, "bfloat16"), (128, False, "bfloat16"), (128, True, "bfloat16"), (128, False, "float16"),
        (128, True, "float16")}
    for c in cases:
        split = shapes.SPLITS[c["split"]]
        assert c["experts"] == split["experts_local"] and c["top_k"] == shapes.model(c["split"])["top_k"]
        for proj, g in c["projs"].items():
            assert (g["n"], g["k"]) == (split[proj]["n"], split[proj]["k"])
            assert 0 < g["active_experts"] <= c["experts"] and sum(g["counts"]) == g["routed_rows"]
            v = g["variants"]
            assert v["g128"]["checkpoint_bytes"] < v["g128-zp"]["checkpoint_bytes"] < v["g32"]["checkpoint_bytes"]
            # group 128 reads a quarter of group 32's scale bytes; zero points double them
            assert v["g128"]["read_bytes"] < v["g128-zp"]["read_bytes"] < v["g32"]["read_bytes"]
        if c["routed_over"] == c["experts"]:  # decode and Qwen3: every route lands on this GPU
            assert c["projs"]["gate_up"]["routed_rows"] == c["x"] * c["top_k"]
    ep8 = next(c for c in cases if c["scenario"] == "formats EP8 prefill")
    assert ep8["routed_over"] == shapes.model("ep8")["experts"] == 384


def test_ratios_and_summary():
    times = {"g32": 10.0, "g128": 9.0, "g128-zp": 9.45, "g128-fp16": 8.0, "g128-zp-fp16": 10.0, "grouped_mm": 20.0}
    r = formats.ratios(times)
    assert r["g128-zp"]["zp_over_sym"] == 1.05 and r["g128-zp-fp16"]["zp_over_sym"] == 1.25
    assert r["g128"]["zp_over_sym"] is None and r["g128"]["over_g32"] == 0.9
    assert r["g32"]["over_grouped_mm"] == 0.5
    rows = [dict(scenario="formats X", x=1, proj="down", variant=name, pct_floor=50.0, check="ok", **r[name])
            for name in r]
    rows[2]["check"] = "FAIL: rel error 1.0e+00"
    text = formats.summary(rows)
    assert "1 failed checks" in text and "g128-zp: FAIL: rel error" in text
    assert "1.050x" in text and "0.500x" in text


def test_summary_with_against():
    times = {"g32": 10.0, "g128": 9.0, "g128-zp": 9.45, "g128-fp16": 8.0, "g128-zp-fp16": 10.0, "grouped_mm": 20.0}
    r = formats.ratios(times)
    rows = [dict(scenario="formats X", x=1, proj="down", variant=name, pct_floor=50.0, check="ok", **r[name])
            for name in r]
    assert "--against" not in formats.summary(rows)
    for i, row in enumerate(rows):
        row.update(vs_against=1.0 + i / 100, against_check="ok")
    rows[3]["against_check"] = "FAIL: NaN in routed rows"
    text = formats.summary(rows)
    lines = text.splitlines()
    table = lines.index(next(l for l in lines if l.startswith("--against: its time / ours")))
    names = lines[table + 1].split()[3:]  # after "scenario T proj"
    cells = dict(zip(names, lines[table + 2].split()[-len(names):]))
    assert cells == {"g32": "1.000x", "g128": "1.010x", "g128-zp": "1.020x", "g128-fp16": "1.030x",
                     "g128-zp-fp16": "1.040x"}
    assert "1 failed checks" in text and "g128-fp16: FAIL: NaN in routed rows" in text
