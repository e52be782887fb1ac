"""lab/sass_loops.py without nvdisasm: loops and their instruction mix from a canned listing in
nvdisasm's format (an outer loop around an inner one)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lab"))
import sass_loops  # noqa: E402

LISTING = """
        .global         chord_entry
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDS.128 R4, [R2] ;
.L_x_0:
        /*0020*/                   LOP3.LUT R8, R4, 0xf000f, R9, 0xea, !PT ;
        /*0030*/                   HFMA2 R8, R8, 1, 1, -R10 ;
        /*0040*/                   HMMA.16816.F32.BF16 R12, R8, R20, R12 ;
        /*0050*/              @!P0 BRA `(.L_x_0) ;
        /*0060*/                   HGMMA.64x32x16.F32.BF16 R24, R8, gdesc[UR4], R24 ;
        /*0070*/               @P1 BRA `(.L_x_1) ;
        /*0080*/                   BRA `(.L_x_2) ;
.L_x_2:
        /*0090*/                   EXIT ;
"""


def test_loops_are_found_and_the_inner_one_is_marked():
    instructions, labels = sass_loops.parse(LISTING)
    assert len(instructions) == 10
    assert labels == {"L_x_1": 0x10, "L_x_0": 0x20, "L_x_2": 0x90}
    # The forward branch to .L_x_2 is not a loop.
    assert sass_loops.loops(instructions, labels) == [(0x10, 0x70, False), (0x20, 0x50, True)]


def test_a_loop_counts_its_instructions_and_mmas_without_predicates_or_modifiers():
    instructions, labels = sass_loops.parse(LISTING)
    count, mmas, ops = sass_loops.summary(instructions, 0x20, 0x50)
    assert (count, mmas) == (4, 1)
    assert ops == {"LOP3": 1, "HFMA2": 1, "HMMA": 1, "BRA": 1}
    count, mmas, ops = sass_loops.summary(instructions, 0x10, 0x70)
    assert (count, mmas, ops["LDS"], ops["HGMMA"]) == (7, 2, 1, 1)
    assert sass_loops.opcode("@!UPT UIADD3 UR4, UR4, 0x1, URZ") == "UIADD3"
