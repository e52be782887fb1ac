"""lab/decode_grid.py without a GPU: kernel names to tiles, resident CTAs per SM from ptxas's
resources, and a call's grid on its routing draw."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lab"))
import decode_grid  # noqa: E402


def test_parse_kernel_reads_both_engines():
    k = decode_grid.parse_kernel("w4a16_indexed_m16n128k128s3w1x4_sk2")
    assert (k["engine"], k["bm"], k["bn"], k["bk"], k["stages"], k["warps_n"], k["split_k"]) == \
        ("mma_sync", 16, 128, 128, 3, 4, 2)
    k = decode_grid.parse_kernel("w4a16_indexed_m8n64k256s3w1x4_g128")
    assert (k["bm"], k["bn"], k["bk"], k["split_k"]) == (8, 64, 256, 1)
    k = decode_grid.parse_kernel("w4a16_indexed_m16n128k128s3w1x4_zpg128_sk4_gs1")  # a forced group-sums form
    assert (k["bm"], k["split_k"]) == (16, 4)
    assert decode_grid.parse_kernel("w4a16_indexed_m8n128k128s3w1x4_sk2")["split_k"] == 2
    k = decode_grid.parse_kernel("w4a16_wgmma_indexed_m32n256wg2s5")
    assert (k["engine"], k["bm"], k["bn"], k["bk"], k["stages"], k["split_k"]) == ("wgmma", 32, 256, 64, 5, 1)
    assert decode_grid.parse_kernel("int4_dequantize") is None
    # The stream-K schedule's suffix is not a weight kind, after one or alone.
    k = decode_grid.parse_kernel("w4a16_indexed_m8n128k128s3w1x4_nf4_stk")
    assert (k["bn"], k["split_k"], k["stream_k"]) == (128, 1, True)
    assert decode_grid.parse_kernel("w4a16_masked_m8n64k128s3w1x4_stk")["stream_k"]
    assert not decode_grid.parse_kernel("w4a16_indexed_m8n128k128s3w1x4_sk2")["stream_k"]
    # An n-block run's suffix is not a weight kind either.
    k = decode_grid.parse_kernel("w4a16_indexed_m8n128k64s8w1x4_nr4")
    assert (k["bk"], k["stages"], k["split_k"], k["n_run"]) == (64, 8, 1, 4)
    assert decode_grid.parse_kernel("w4a16_indexed_m8n128k64s8w1x4_zp_nr2")["n_run"] == 2
    assert decode_grid.parse_kernel("w4a16_indexed_m8n128k128s3w1x4_sk2")["n_run"] == 1
    # A masked tile loop's suffix, alone or after a split (the masked decode tiles in vLLM's buffers).
    k = decode_grid.parse_kernel("w4a16_masked_m64n128k64s4w1x4_ml")
    assert (k["bm"], k["warps_m"], k["split_k"], k["masked_loop"]) == (64, 1, 1, True)
    k = decode_grid.parse_kernel("w4a16_masked_m16n128k128s3w1x4_sk2_ml")
    assert (k["bm"], k["split_k"], k["masked_loop"]) == (16, 2, True)
    assert decode_grid.parse_kernel("w4a16_masked_m16n128k128s3w1x4_zp_ml")["masked_loop"]
    assert not decode_grid.parse_kernel("w4a16_masked_m16n128k128s3w1x4_sk2")["masked_loop"]


def test_ctas_per_sm_takes_the_tightest_limit():
    # The masked EP8 decode tile: 68 KB of shared memory holds 3, 129 registers also 3.
    assert decode_grid.ctas_per_sm(128, 67968, 129) == 3
    # Registers bind: 80 per thread (2560 per warp) hold 6 CTAs of 4 warps, shared memory 9.
    assert decode_grid.ctas_per_sm(128, 24000, 80) == 6
    # 256 threads at 128 registers: two CTAs fill the register file.
    assert decode_grid.ctas_per_sm(256, 100000, 128) == 2


def test_grid_counts_tiles_per_expert():
    call = {"topk_ids": [[0, 1], [0, 2], [0, 1]], "n": 512}  # expert 0: 3 rows, 1: 2, 2: 1
    k = {"bm": 2, "bn": 128, "split_k": 2}
    tiles, ctas, hottest = decode_grid.grid(call, k)
    assert (tiles, hottest) == (2 + 1 + 1, 2)
    assert ctas == tiles * (512 // 128) * 2
    # Runs of 3 n blocks over 5: two CTAs along N per tile.
    k = {"bm": 2, "bn": 128, "split_k": 1, "n_run": 3}
    call = {"topk_ids": [[0, 1], [0, 2], [0, 1]], "n": 640}
    tiles, ctas, _ = decode_grid.grid(call, k)
    assert ctas == tiles * 2
