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
