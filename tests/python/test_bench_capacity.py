"""CPU: bench/bench_w4a16.py's --capacity sizes the masked rows' buffers as it says: max_m twice
the mean rows per group (tight), or vLLM's batched buffer, 256 tokens per dispatching rank times
the EP ranks (vllm)."""
import argparse
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_w4a16  # noqa: E402


def set_capacity(value):
    bench_w4a16.apply_options(argparse.Namespace(capacity=value))


def test_masked_capacity_follows_the_option():
    try:
        set_capacity("tight")
        assert [bench_w4a16.masked_capacity(t, 8) for t in (8, 64)] == [16, 128]
        set_capacity("vllm")
        assert [bench_w4a16.masked_capacity(8, ranks) for ranks in (8, 16, 32)] == [2048, 4096, 8192]
        assert bench_w4a16.masked_capacity(64, 8) == 2048  # the buffer, whatever the rows
        assert bench_w4a16.masked_capacity(256, 1) == 512  # but never fewer rows than drawn
    finally:
        set_capacity("tight")


def test_capacity_option_is_parsed():
    assert bench_w4a16.parse_args(["--capacity", "vllm"]).capacity == "vllm"
    assert bench_w4a16.parse_args([]).capacity == "tight"


def test_generalization_masked_calls_take_the_capacity():
    import generalization

    try:
        set_capacity("vllm")
        calls = generalization.calls(quick=True, only="masked", masked_max_m=bench_w4a16.masked_capacity)
        assert calls and all(c["mode"] == "masked" for c in calls)
        # dsv3_ep8 and the other EP8 splits: vLLM's 2048 rows per group, the drawn rows inside.
        for c in calls:
            assert c["max_m"] == 2048
            assert max(c["masked_m"]) <= c["max_m"]
        set_capacity("tight")
        tight = generalization.calls(quick=True, only="masked", masked_max_m=bench_w4a16.masked_capacity)
        assert [c["max_m"] for c in tight] == [2 * c["x"] for c in tight]
        # The same rows either way.
        assert [c["masked_m"] for c in tight] == [c["masked_m"] for c in calls]
    finally:
        set_capacity("tight")


def test_sweep_option_replaces_the_rows_values():
    import pytest
    import shapes

    args = bench_w4a16.parse_args(["--sweep", "96,128", "--only", "masked"])
    assert args.sweep == [96, 128]
    assert bench_w4a16.row_values(args) == [96, 128]
    assert shapes.sweep("masked EP8", bench_w4a16.row_values(args)) == [96, 128]
    assert "--sweep 96,128" in bench_w4a16.command_line(args)
    plain = bench_w4a16.parse_args([])
    assert bench_w4a16.row_values(plain) is False
    assert shapes.sweep("masked EP8", bench_w4a16.row_values(plain)) == [8, 16, 32, 64]
    for bad in (["--sweep", "0"], ["--sweep", "8,x"], ["--sweep", "8", "--quick"], ["--sweep", "8", "--set", "formats"]):
        with pytest.raises(SystemExit):
            bench_w4a16.parse_args(bad)
