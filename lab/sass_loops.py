#!/usr/bin/env python3
"""The loops of a cubin's SASS and what they issue, without a GPU: a kernel's main loop's
instruction count and mix (decode, MMA, copies, barriers) is what the decode tiles' speed
follows (docs/kernels.md, "Where the time goes"), and it can be read before any device run.

    lab/sass_loops.py CUBIN... [--all] [--nvdisasm PATH]

A cubin comes from `build/chord config ... --cubin FILE` (the kernel a shape resolves to,
CHORD_W4A16_* applied). Each innermost loop (a backward branch with no other loop inside it)
is printed with its instruction count, its MMAs (HMMA, HGMMA) and instructions per MMA, and its
most frequent opcodes; --all prints the enclosing loops too. A loop unrolled by two holds two
k blocks: read its MMA count against the tile's.

nvdisasm ships with the CUDA toolkit; where the toolkit lacks it, the package index has it:
    pip download --no-deps nvidia-cuda-nvdisasm -d /tmp/nvd && unzip -o /tmp/nvd/*.whl -d /tmp/nvd
    lab/sass_loops.py FILE --nvdisasm /tmp/nvd/nvidia/cu13/bin/nvdisasm
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"\s*\.(L_x_\d+):")
BRANCH = re.compile(r"\bBRA\s+(?:`\()?\.(L_x_\d+)")
PREDICATE = re.compile(r"^@!?U?P[T\d]+\s+")


def opcode(text):
    """The opcode of an instruction's text, without its predicate and modifiers."""
    return PREDICATE.sub("", text).split()[0].split(".")[0]


def parse(sass):
    """[(address, text)] of the instructions and {label: address} of nvdisasm's output."""
    instructions, labels, pending = [], {}, []
    for line in sass.splitlines():
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTRUCTION.match(line)
        if m:
            address = int(m.group(1), 16)
            instructions.append((address, m.group(2)))
            for name in pending:
                labels[name] = address
            pending = []
    return instructions, labels


def loops(instructions, labels):
    """Each loop as (first address, last address, innermost), outermost spans included."""
    spans = sorted({(labels[m.group(1)], address)
                    for address, text in instructions
                    for m in [BRANCH.search(text)]
                    if m and m.group(1) in labels and labels[m.group(1)] <= address})
    return [(lo, hi, not any((a, b) != (lo, hi) and lo <= a and b <= hi for a, b in spans)) for lo, hi in spans]


def summary(instructions, lo, hi):
    """(instruction count, MMA count, Counter of opcodes) of the addresses [lo, hi]."""
    ops = collections.Counter(opcode(text) for address, text in instructions if lo <= address <= hi)
    return sum(ops.values()), ops["HMMA"] + ops["HGMMA"], ops


def find_nvdisasm(given):
    for candidate in (given, shutil.which("nvdisasm"),
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvdisasm")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("sass_loops.py: no nvdisasm (give --nvdisasm PATH; this file's docstring says where to get one)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cubins", nargs="+")
    parser.add_argument("--all", action="store_true", help="also the loops that hold other loops")
    parser.add_argument("--nvdisasm", default=None)
    args = parser.parse_args()
    nvdisasm = find_nvdisasm(args.nvdisasm)
    for path in args.cubins:
        sass = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
        instructions, labels = parse(sass)
        print(f"{path}: {len(instructions)} instructions")
        for lo, hi, innermost in loops(instructions, labels):
            if not (innermost or args.all):
                continue
            count, mmas, ops = summary(instructions, lo, hi)
            per_mma = f", {count / mmas:.1f} per MMA" if mmas else ""
            mix = ", ".join(f"{k} {v}" for k, v in ops.most_common(12))
            print(f"  loop {lo:#06x}-{hi:#06x}{'' if innermost else ' (outer)'}: {count} instruction"
                  f"{'' if count == 1 else 's'}, {mmas} MMA{per_mma}; {mix}")


if __name__ == "__main__":
    main()
