"""Where a kernel's warps stall, per SASS instruction, from ncu's source page:

    ncu --import REPORT.ncu-rep --page source --print-source sass --csv > sass.csv
    python3 lab/kernel_check/sass_stalls.py sass.csv [--kernel I] [--top N]

The CSV holds one block per profiled kernel (a "Kernel Name" line, a header, one line per
instruction). Prints the kernel's share of each stall reason, then its N instructions with the
most warp-state samples, in address order, each with its share of the samples, its executed
count and its three largest stall reasons. Needs the SourceCounters section in the report."""
import argparse
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_kernels(lines):
    """[(name, [row dict per instruction])] from the CSV lines of `ncu --page source --csv`."""
    kernels, header = [], None
    for row in csv.reader(lines):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernels.append((row[1] if len(row) > 1 else "", []))
            header = None
        elif kernels and header is None:
            header = row
        elif kernels:
            kernels[-1][1].append(dict(zip(header, row)))
    return kernels


def summarize(rows, top):
    """(total samples, [(reason, share)] largest first, [(index, row, share, [(count, reason)])])."""
    if not rows or SAMPLES not in rows[0]:
        raise ValueError(f"no '{SAMPLES}' column: profile with --section SourceCounters")
    reasons = [h for h in rows[0] if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(number(r[SAMPLES]) for r in rows) or 1.0
    by_reason = collections.Counter()
    for r in rows:
        for reason in reasons:
            by_reason[reason[6:]] += number(r[reason])
    shares = [(reason, count / total) for reason, count in by_reason.most_common() if count > 0]
    hottest = sorted(range(len(rows)), key=lambda i: -number(rows[i][SAMPLES]))[:top]
    lines = []
    for i in sorted(hottest):
        r = rows[i]
        stalls = sorted(((number(r[s]), s[6:]) for s in reasons if number(r[s]) > 0), reverse=True)[:3]
        lines.append((i, r, number(r[SAMPLES]) / total, stalls))
    return total, shares, lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--kernel", type=int, default=None, help="index of the profiled kernel (default: all)")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    with open(args.csv, newline="") as f:
        kernels = read_kernels(f)
    if not kernels:
        sys.exit(f"{args.csv}: no 'Kernel Name' block (not ncu's --page source --csv output)")
    chosen = range(len(kernels)) if args.kernel is None else [args.kernel]
    for k in chosen:
        name, rows = kernels[k]
        total, shares, lines = summarize(rows, args.top)
        print(f"== kernel {k} ({name}): {len(rows)} instructions, {int(total)} samples")
        print("   " + ", ".join(f"{reason} {share * 100:.1f}%" for reason, share in shares[:10]))
        for i, r, share, stalls in lines:
            why = " ".join(f"{reason}:{int(count)}" for count, reason in stalls)
            print(f"{i:6d} {share * 100:5.1f}% exec={r.get('Instructions Executed', ''):>10s}  "
                  f"{r.get('Source', '')[:64]:64s} {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
