"""humming.tune.get_heuristics_config on the CPU: the library's tuning table (through
chord_w4a16_tuning_json) where one holds the shape, the mean-rows rule elsewhere, in the
(min_m, max_m, config) form vLLM reads."""
import json

import pytest
import torch

import chord_kernels as ck
from humming import dtypes
from humming.config import GemmType, LayerConfig
from humming.tune import block_for as _block_for
from humming.tune import get_heuristics_config

# Without a GPU the library reads sm_90a's tables; a GPU picks its own arch's.
needs_sm90a_tables = pytest.mark.skipif(
    torch.cuda.is_available() and torch.cuda.get_device_capability() != (9, 0),
    reason="the tuning tables are sm_90a's; this GPU's arch has none")


def layer_with(n, k, experts):
    """A transformed layer's config as prepare_and_transform_humming_tensors fills it (no
    GPU: the library then reads sm_90a's tables)."""
    return LayerConfig(a_dtype=dtypes.bfloat16, b_dtype=dtypes.uint4, c_dtype=dtypes.bfloat16,
                       bs_dtype=dtypes.bfloat16, shape_n=n, shape_k=k, num_experts=experts,
                       device_index=0 if torch.cuda.is_available() else None)


def table_rows_per_expert():
    """sm90a_qwen3's rows as (min rows per expert, max, block_m), read through the C API
    with E = 1 and top_k = 1 (then M is rows per expert)."""
    return [(lo, hi, c["block_size_m"]) for lo, hi, c in json.loads(ck._ops._C.tuning_json("sm_90a", 1, 1536, 2048, 1))]


def test_binding_returns_table_or_none():
    rows = json.loads(ck._ops._C.tuning_json("sm_90a", 48, 4096, 7168, 8))
    assert len(rows) >= 3 and rows[0][0] == 0
    for (_, hi, _), (lo, _, _) in zip(rows, rows[1:]):
        assert lo == hi + 1
    assert all(r[2]["block_size_m"] % r[2]["block_m"] == 0 for r in rows)  # the tile divides the block
    assert ck._ops._C.tuning_json(None, 8, 512, 256, 1) is None  # no table: the caller's rule
    assert ck._ops._C.tuning_json("sm_80", 128, 1536, 2048, 1) is None  # tables are per arch
    with pytest.raises(ValueError, match="sm_75"):
        ck._ops._C.tuning_json("sm_75", 128, 1536, 2048, 1)
    with pytest.raises(ValueError, match="top_k"):
        ck._ops._C.tuning_json("sm_90a", 128, 1536, 2048, 0)


@needs_sm90a_tables
@pytest.mark.parametrize("n,k,name", [(1536, 2048, "w13"), (2048, 768, "w2")])
def test_tuning_rows_come_from_the_library_table(n, k, name):
    experts = 128
    rows = get_heuristics_config(layer_config=layer_with(n, k, experts), use_f16_accum=False,
                                 use_batch_invariant=False, gemm_type=GemmType.INDEXED)
    json.dumps(rows)
    assert all(r[2]["source"] == "tuning_table" and r[2]["backend"] == "chord" for r in rows)
    assert rows[0][0] == -1  # m = 0 is covered too
    for a, b in zip(rows, rows[1:]):
        assert b[0] == a[1]  # (lower, upper] ranges, no gap, no overlap
    table = table_rows_per_expert()
    assert len(rows) == len(table)
    # valid_shape_m = routed rows: the row whose rows-per-expert range holds m / E.
    for m in (1, 5, 767, 768, 769, 1407, 1408, 5000, 100_000, 2_000_000):
        block = _block_for(rows, m)
        per_expert = m // experts
        expected = [b for lo, hi, b in table if lo <= per_expert <= hi]
        assert [block] == expected, (m, block, expected)
        covering = [r for r in rows if r[0] < m <= r[1]]
        assert len(covering) == 1 and covering[0][2]["block_shape"] == [block, 0, 0]
    assert _block_for(rows, 0) == rows[0][2]["block_shape"][0]


def test_tuning_rows_fall_back_without_a_table():
    rows = get_heuristics_config(layer_config=layer_with(512, 256, 8), gemm_type=GemmType.GROUPED_CONTIGUOUS)
    assert all("source" not in r[2] for r in rows)
    for m in (1, 85, 86, 171, 10_000_000):
        assert _block_for(rows, m) == ck.block_size_for_rows(m / 8)


def test_generalization_set_aligns_at_the_facades_block():
    """bench/generalization.routing_block (torch-free, for the bench's set) gives the block our
    facade hands vLLM for a shape without a table, at every routed row count."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "bench"))
    import generalization
    from humming.tune import heuristic_rows
    for experts in (8, 16, 32, 48, 128):
        rows = heuristic_rows(experts)
        blocks = {generalization.routing_block(m, experts) for m in range(0, 80 * experts)}
        assert blocks == {16, 32, 64}
        for m in range(0, 80 * experts):
            assert generalization.routing_block(m, experts) == _block_for(rows, m), (experts, m)
