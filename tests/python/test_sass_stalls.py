"""lab/kernel_check/sass_stalls.py on a small CSV in the shape of ncu's `--page source --csv`:
two kernel blocks, stall shares and the hottest instructions in address order."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lab", "kernel_check"))
import sass_stalls  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
          '"stall_barrier","stall_wait","stall_long_sb","stall_wait (Not Issued)"')
CSV = "\n".join([
    '"Kernel Name","chord_entry",', HEADER,
    '"0x10","HGMMA.64x128x16.F32.BF16 R24","10","100","0","10","0","9"',
    '"0x20","WARPGROUP.DEPBAR.LE gsb0, 0x0","60","100","60","0","0","0"',
    '"0x30","@!P0 BRA 0x90","30","200","0","5","25","5"',
    '"Kernel Name","second",', HEADER,
    '"0x10","NOP","1,000","1","0","1,000","0","0"',
])


def test_read_kernels_splits_the_blocks():
    kernels = sass_stalls.read_kernels(CSV.splitlines())
    assert [name for name, _ in kernels] == ["chord_entry", "second"]
    assert [len(rows) for _, rows in kernels] == [3, 1]
    assert kernels[0][1][1]["Source"].startswith("WARPGROUP.DEPBAR")


def test_summarize_shares_and_hottest_in_address_order():
    rows = sass_stalls.read_kernels(CSV.splitlines())[0][1]
    total, shares, lines = sass_stalls.summarize(rows, top=2)
    assert total == 100
    assert shares == [("barrier", 0.6), ("long_sb", 0.25), ("wait", 0.15)]  # "Not Issued" columns left out
    assert [i for i, _, _, _ in lines] == [1, 2]  # the two hottest, in address order
    assert lines[1][2] == pytest.approx(0.3)
    assert lines[1][3] == [(25.0, "long_sb"), (5.0, "wait")]


def test_thousands_separators_are_numbers():
    rows = sass_stalls.read_kernels(CSV.splitlines())[1][1]
    total, shares, _ = sass_stalls.summarize(rows, top=1)
    assert total == 1000 and shares == [("wait", 1.0)]


def test_a_report_without_source_counters_is_an_error():
    rows = [{"Address": "0x10", "Source": "NOP"}]
    with pytest.raises(ValueError, match="SourceCounters"):
        sass_stalls.summarize(rows, top=1)
