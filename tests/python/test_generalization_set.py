"""The generalization set of shapes/suite.json, as the bench reads it (no GPU): other models than
the suite's, splits that no tuning table names and no kernel set holds, and the calls
bench/generalization.py derives from its rows (the routing draws, geometry and read floors that
`bench/bench_w4a16.py --set generalization` times and lab/generalization_configs.py lists)."""
import glob
import json
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import generalization  # noqa: E402
import shapes  # noqa: E402

SET = shapes.Section("generalization")


def test_other_models_under_untuned_splits():
    suite = shapes.Section("suite")
    assert len(SET.models) >= 8
    assert not set(SET.models) & set(suite.models)
    assert not {(m["hidden"], m["moe_intermediate"], m["experts"]) for m in SET.models.values()} & \
        {(m["hidden"], m["moe_intermediate"], m["experts"]) for m in suite.models.values()}
    tables = {json.load(open(p))["split"] for p in glob.glob(os.path.join(ROOT, "tuning_tables", "*.json"))}
    for name, split in SET.splits.items():
        assert name not in tables and name not in suite.splits
        assert not split.get("kernel_set", False)
        model = SET.model(name)
        assert split["experts_local"] * split["ep"] == model["experts"]
        for proj in ("gate_up", "down"):
            assert split[proj]["n"] % 16 == 0 and split[proj]["k"] % 64 == 0
    for row in SET.rows:
        assert row["split"] in SET.splits
        if row["mode"] == "indexed":
            assert row["draw"] in ("uniform", "skewed") and row["routed_over"] == "local_experts"


def test_calls_are_reproducible_and_follow_the_rows():
    calls = generalization.calls()
    assert calls == generalization.calls()
    expected = sum(2 * len(SET.sweep(r, False)) for r in SET.rows)
    assert len(calls) == expected
    for c in calls:
        assert 0 < c["active_experts"] <= c["experts"]
        assert c["floor_us"] > 0 and c["bytes"] > 0
        if c["mode"] == "indexed":
            top_k = SET.model(c["split"])["top_k"]
            assert c["routed_rows"] == c["x"] * top_k  # decode: every route lands on this GPU
            assert all(len(set(ids)) == top_k for ids in c["topk_ids"])
            assert c["capacity"] % c["block_size"] == 0 and c["capacity"] >= c["routed_rows"]
        if c["mode"] == "masked":
            assert all(c["x"] // 2 <= m <= c["x"] + c["x"] // 2 for m in c["masked_m"])


def test_skewed_draw_touches_fewer_experts():
    def active(draw):
        ids = generalization.draw_topk(generalization.rng_for("t", draw), 16, 128, 8, draw)
        return len({e for row in ids for e in row})

    assert active("skewed") < active("uniform")


def test_floor_counts_touched_experts_activations_and_outputs():
    call = dict(mode="offsets", experts=4, n=256, k=512, weight="int4", topk_ids=[[0], [0], [2]])
    generalization.geometry(call, None)
    weights = 2 * 256 * (512 // 2 + 2 * 512 // 32)
    assert call["active_experts"] == 2 and call["routed_rows"] == 3
    assert call["bytes"] == weights + 3 * 512 * 2 + 3 * 256 * 2


def test_resolver_lists_a_config_for_every_call():
    cli = os.path.join(ROOT, "build", "chord")
    if not os.path.exists(cli):
        pytest.skip("needs this tree's build/chord (scripts/setup.sh)")
    calls = generalization.resolve_configs(generalization.calls(quick=True), cli=[cli], jobs=2)
    for c in calls:
        assert "error" not in c["config"], (c["scenario"], c["x"], c["proj"], c["config"])
        assert c["config"]["source"]


def test_only_takes_a_comma_separated_list():
    both = generalization.calls(quick=True, only="dsv3,q235_tp8")
    assert both == generalization.calls(quick=True, only="dsv3") + generalization.calls(quick=True, only="q235_tp8")
    assert generalization.calls(quick=True, only="dsv3,") == generalization.calls(quick=True, only="dsv3")


def test_peers_run_the_indexed_int4_calls():
    notes = {(c["mode"], c["weight"], c["split"], p): generalization.peer_note(c, p)
             for c in generalization.calls() for p in ("marlin", "humming")}
    for (mode, weight, split, peer), note in notes.items():
        if mode != "indexed" or weight != "int4":
            assert note == ""  # masked, NF4: not run, no reason to give
        elif peer == "marlin" and split == "gptoss_tp1":
            assert "hidden 2880 % 128" in note  # vLLM's Marlin MoE refuses the layer
        else:
            assert note is None


def test_config_label_names_the_split_and_the_run():
    config = dict(engine="mma_sync", block_m="8", block_n="128", block_k="64", stages="8", warps_m="1",
                  warps_n="4", split_k="1", n_run="4")
    assert generalization.config_label(config) == "mma_sync bm8 bn128 bk64 s8 w1x4 nr4"
    config.update(split_k="2", n_run="1", stages="3", block_k="128")
    assert generalization.config_label(config) == "mma_sync bm8 bn128 bk128 s3 w1x4 sk2"
    del config["n_run"]  # chord config prints n_run only where there is a run
    assert generalization.config_label(config) == "mma_sync bm8 bn128 bk128 s3 w1x4 sk2"
