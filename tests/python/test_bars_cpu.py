"""bench/bars.py on made-up results (no GPU): which rows each bar judges and how it judges them."""
import json
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bars  # noqa: E402


def suite_row(scenario, x, chord_us, floor_us, bf16_us=1000.0, marlin_us=None, check="ok"):
    row = dict(scenario=scenario, x=x, proj="gate_up", routed_rows=8 * x, active_experts=8, chord_us=chord_us,
               floor_us=floor_us, grouped_mm_bf16_us=bf16_us, vs_floor=round(floor_us / chord_us, 3), check=check)
    if marlin_us is not None:
        row.update(marlin_us=marlin_us, marlin_check="ok")
    return row


def set_row(x, chord_us, floor_us, marlin_us=None, marlin_check="ok"):
    row = dict(scenario="dsv3_ep8 indexed uniform", x=x, proj="down", routed_rows=8 * x, active_experts=8,
               chord_us=chord_us, floor_us=floor_us, pct_floor=round(100 * floor_us / chord_us, 1), check="ok")
    if marlin_us is not None:
        row.update(marlin_us=marlin_us, marlin_check=marlin_check)
    return row


def test_decode_rows_are_the_masked_sweep_and_rows_of_at_most_64():
    assert bars.is_decode(suite_row("masked EP8", 128, 10.0, 5.0))
    assert bars.is_decode(suite_row("indexed EP8 decode", 64, 10.0, 5.0))
    assert bars.is_decode(suite_row("offsets Qwen3 INT4", 8, 10.0, 5.0))
    assert not bars.is_decode(suite_row("offsets Qwen3 INT4", 512, 10.0, 5.0))
    assert not bars.is_decode(suite_row("indexed TP8", 1024, 10.0, 5.0))
    assert not bars.is_decode(suite_row("contiguous EP8", 128, 10.0, 5.0))
    assert bars.is_decode(set_row(64, 10.0, 5.0))


def test_each_bar_judges_its_rows():
    rows = [
        suite_row("indexed EP8 decode", 20, 100.0, 90.0, marlin_us=120.0),   # 90% of the floor, 0.83x Marlin
        suite_row("indexed EP8 decode", 30, 100.0, 80.0, marlin_us=105.0),   # 80%, 0.95x Marlin: two misses
        suite_row("offsets Qwen3 INT4", 1, 8.0, 2.0, marlin_us=8.5),         # floor < 10 us: Marlin bar only
        suite_row("indexed TP8", 1024, 200.0, 100.0, bf16_us=210.0),         # prefill, 0.95x BF16
        suite_row("contiguous EP8", 512, 2100.0, 900.0, bf16_us=2000.0),     # prefill, 1.05x BF16: a miss
        suite_row("masked EP8", 8, 230.0, 177.0, check="FAIL: NaN"),         # 77%, and a failed check
        set_row(1, 40.0, 36.0, marlin_us=50.0, marlin_check="FAIL: rel error"),  # a failed peer: not judged
    ]
    verdict = bars.judge(rows)
    assert (verdict["decode floor"]["judged"], verdict["decode floor"]["met"]) == (4, 2)
    assert [text for _, text in verdict["decode floor"]["misses"]] == [
        "masked EP8 x=8 gate_up: 77.0% of the floor", "indexed EP8 decode x=30 gate_up: 80.0% of the floor"]
    assert (verdict["decode Marlin"]["judged"], verdict["decode Marlin"]["met"]) == (3, 1)
    assert [text for _, text in verdict["decode Marlin"]["misses"]] == [
        "offsets Qwen3 INT4 x=1 gate_up: 0.941x Marlin", "indexed EP8 decode x=30 gate_up: 0.952x Marlin"][::-1]
    assert (verdict["prefill BF16"]["judged"], verdict["prefill BF16"]["met"]) == (2, 1)
    assert verdict["prefill BF16"]["misses"][0][1] == "contiguous EP8 x=512 gate_up: 1.050x BF16"
    assert (verdict["checks"]["judged"], verdict["checks"]["met"]) == (7, 6)


def test_command_line_reads_several_files_and_writes_the_verdicts(tmp_path, capsys):
    suite, gen = tmp_path / "bench.json", tmp_path / "generalization.json"
    suite.write_text(json.dumps(dict(meta={}, rows=[suite_row("masked EP8", 8, 200.0, 177.0)])))
    gen.write_text(json.dumps(dict(meta={}, rows=[set_row(1, 40.0, 20.0), set_row(2, 40.0, 39.0)])))
    out = tmp_path / "bars.json"
    assert bars.main([str(suite), str(gen), "--json", str(out), "--misses", "1"]) == 0
    text = capsys.readouterr().out
    assert "decode floor      2 of    3 met" in text
    assert "dsv3_ep8 indexed uniform x=1 down: 50.0% of the floor" in text
    verdict = json.loads(out.read_text())
    assert verdict["decode floor"] == dict(judged=3, met=2, host_bound=0,
                                           misses=["dsv3_ep8 indexed uniform x=1 down: 50.0% of the floor"])


def test_a_sweep_run_is_not_judged(tmp_path):
    run = tmp_path / "bench.json"
    run.write_text(json.dumps(dict(meta=dict(command="python3 bench/bench_w4a16.py --sweep 96,128 --only masked"),
                                   rows=[suite_row("masked EP8", 96, 200.0, 177.0)])))
    with pytest.raises(SystemExit):
        bars.main([str(run)])


def test_marlin_verdicts_on_host_bound_rows_are_counted_and_marked(capsys):
    """A row whose time includes host work (ours or Marlin's host_late above 0.5) is still judged,
    and counted and marked host-bound; a late fraction at or under 0.5, or none, is not."""
    rows = [set_row(1, 10.0, 5.0, marlin_us=20.0), set_row(2, 10.0, 5.0, marlin_us=10.0),
            set_row(4, 10.0, 5.0, marlin_us=10.0), set_row(8, 10.0, 5.0, marlin_us=10.0)]
    rows[0]["marlin_host_late"] = 0.9  # met, on Marlin's host path
    rows[1]["host_late"] = 0.6         # missed, on ours
    rows[2].update(host_late=0.5, marlin_host_late=0.0)
    verdict = bars.judge(rows)["decode Marlin"]
    assert (verdict["judged"], verdict["met"], verdict["host_bound"]) == (4, 1, 2)
    assert sorted(text for _, text in verdict["misses"]) == [
        "dsv3_ep8 indexed uniform x=2 down: 1.000x Marlin (host-bound)",
        "dsv3_ep8 indexed uniform x=4 down: 1.000x Marlin", "dsv3_ep8 indexed uniform x=8 down: 1.000x Marlin"]


# launch_cost.cu's output: the empty-kernel table (whose rows must not be read as the curve), then
# the plain read, 10 us + 1 us per 4.47 MB (a 10 us fixed cost on a 4.47 TB/s stream), then a line
# of another table that must end it.
CURVE_TEXT = """NVIDIA H200, 132 SMs
empty kernel, 128 threads: us by grid (rows) and dynamic shared memory / cluster (columns)
  grid   smem0/c1  smem48K/c1  smem96K/c1  smem0/c2  smem0/c4  smem0/c8  smem96K/c4
   132      2.70        2.70        2.70      2.70      2.70      2.70        2.70
plain read of B bytes (132 x 8 CTAs x 256 threads, 4 x 16-byte loads in flight per thread)
  MB      us   floor us  of floor  us over floor
     64    25.01     15.01     60.0%     10.00
    128    40.03     30.03     75.0%     10.00
    512   130.11    120.11     92.3%     10.00
another table
   1024    1.00      2.00      3.0%      4.00
"""


def expect_value_error(text, words):
    try:
        bars.parse_read_curve(text)
    except ValueError as e:
        assert words in str(e), str(e)
    else:
        raise AssertionError("accepted: " + text)


def test_read_curve_is_the_plain_read_table_only():
    curve = bars.parse_read_curve(CURVE_TEXT)
    assert curve == [(64 * 2**20, 25.01), (128 * 2**20, 40.03), (512 * 2**20, 130.11)]
    expect_value_error(CURVE_TEXT.split("plain read")[0], "plain-read table")
    expect_value_error(CURVE_TEXT + CURVE_TEXT, "more than one plain-read table")
    expect_value_error(CURVE_TEXT.replace("    128    40.03", "    512    40.03"), "a size appears twice")


def test_plain_read_is_linear_between_and_beyond_the_sizes():
    curve = [(100.0, 10.0), (200.0, 12.0), (400.0, 20.0)]
    assert bars.plain_read_us(curve, 100.0) == 10.0
    assert bars.plain_read_us(curve, 200.0) == 12.0
    assert bars.plain_read_us(curve, 150.0) == 11.0
    assert bars.plain_read_us(curve, 300.0) == 16.0
    assert bars.plain_read_us(curve, 600.0) == 28.0   # the last segment's slope
    assert bars.plain_read_us(curve, 50.0) == 9.0     # the first segment's


def test_reach_counts_the_misses_a_plain_read_misses_too():
    curve = bars.parse_read_curve(CURVE_TEXT)
    # Floors of 20 us (89.4 MB: the read takes ~31 us, 65%) and 110 us (~469 MB: ~120 us, 91.5%);
    # the last row meets the bar where the read does not, and is not counted.
    rows = [set_row(1, 30.0, 20.0), set_row(2, 130.0, 110.0), set_row(4, 8.0, 5.0), set_row(8, 22.0, 20.0)]
    verdict = bars.judge(rows, curve)["decode floor"]
    assert (verdict["judged"], verdict["met"], verdict["plain_read_misses"]) == (3, 1, 1)
    read = 20.0 / bars.plain_read_us(curve, 20.0 * bars.STREAM_BYTES_PER_US)
    assert 0.6 < read < 0.7
    assert [text for _, text in verdict["misses"]] == [
        f"dsv3_ep8 indexed uniform x=1 down: 66.7% of the floor (a plain read: {100 * read:.1f}%)",
        "dsv3_ep8 indexed uniform x=2 down: 84.6% of the floor (a plain read: "
        f"{100 * 110.0 / bars.plain_read_us(curve, 110.0 * bars.STREAM_BYTES_PER_US):.1f}%)"]
    assert "plain_read_misses" not in bars.judge(rows)["decode floor"]


def test_command_line_reach(tmp_path, capsys):
    gen, curve = tmp_path / "generalization.json", tmp_path / "launch_cost.txt"
    gen.write_text(json.dumps(dict(meta={}, rows=[set_row(1, 30.0, 20.0), set_row(2, 120.0, 110.0)])))
    curve.write_text(CURVE_TEXT)
    out = tmp_path / "bars.json"
    assert bars.main([str(gen), "--reach", str(curve), "--json", str(out)]) == 0
    assert ("decode floor      1 of    2 met; a plain read of their bytes misses it too on 1 of the misses"
            in capsys.readouterr().out)
    assert json.loads(out.read_text())["decode floor"]["plain_read_misses"] == 1
    for text in ("no table here\n", None):
        if text is not None:
            curve.write_text(text)
        try:
            bars.main([str(gen), "--reach", str(curve) if text is not None else str(tmp_path / "missing.txt")])
        except SystemExit as e:
            assert e.code == 2
        else:
            raise AssertionError("a bad --reach file was accepted")
