"""Where bench results stand against the performance bars of the decode and checkpoint-format
work (docs/performance.md, "Targets and where they stand"), from one or more results files of
bench/bench_w4a16.py (the suite, the generalization set, with or without --peers):

  decode floor   decode rows whose floor is 10 us or more reach >= 85% of it;
  decode Marlin  every decode row Marlin ran takes <= 0.9x Marlin's time (rows under a 10 us
                 floor are held to this bar alone);
  prefill BF16   every prefill row of the suite takes <= 1.0x BF16 torch._grouped_mm's time;
  checks         every row's output check passed.

With --reach CURVE (the output of lab/kernel_check/launch_cost.cu on the same GPU: a plain read
of B bytes timed as the bench times a call, for B from 2 MB up), each judged decode-floor row also
gets the fraction of its floor that a plain read of its floor's bytes (floor_us x 4.47 TB/s)
reaches, and the misses that this read misses too are counted apart: there the launch and the
DRAM ramp take most of what the bar leaves, so a kernel meets it only by reading faster than a
plain read. The read is a reference, not a bound (a well-scheduled copy stream can beat it by a
few percent).

A decode row is a masked row, or an indexed or offsets row of at most 64 tokens per rank (a
contiguous row: 64 rows per expert); the generalization set's calls are all decode rows. A
row's floor is the bench's (the larger of its bytes and FLOP floors). A Marlin verdict whose
row was host-bound (ours or Marlin's `host_late` above peers_chart.HOST_LATE: the time includes
host work) is counted and marked as such: it compares host paths as much as kernels.
Torch-free.

    python3 bench/bars.py RESULTS.json [RESULTS.json ...] [--misses N] [--json OUT] [--reach CURVE]
"""
import argparse
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generalization  # noqa: E402  (torch-free: the set's calls and the read floor's rate)
import peers_chart  # noqa: E402  (torch-free: a row's state and ratio against a peer, the peers' bars)

FLOOR_BAR = 0.85          # floor / chord on decode rows
MARLIN_BAR = peers_chart.BARS["marlin"]  # chord / Marlin on decode rows
BF16_BAR = 1.0            # chord / BF16 grouped_mm on prefill rows
SMALL_FLOOR_US = 10.0     # decode rows under this floor are held to the Marlin bar alone
DECODE_X = 64
STREAM_BYTES_PER_US = generalization.STREAM_BYTES_PER_S / 1e6  # the read floor's rate, bytes per us


def row_name(row):
    return f"{row['scenario']} x={row['x']} {row['proj']}"


def is_generalization(row):
    return "pct_floor" in row  # the set's rows carry pct_floor, the suite's vs_floor


def is_decode(row):
    """The set's calls, the masked sweep, and the suite's other rows of x <= 64 (x: tokens per
    rank on indexed and offsets rows, rows per expert on contiguous ones)."""
    return is_generalization(row) or row["scenario"].startswith("masked") or row["x"] <= DECODE_X


def floor_fraction(row):
    """floor / chord (1.0 = at the floor)."""
    return row["floor_us"] / row["chord_us"]


def marlin_ratio(row):
    """chord's time / Marlin's, or None where Marlin did not run or failed its check."""
    state, ratio = peers_chart.status(row, "marlin")
    return ratio if state == "ok" else None


def host_bound(row, peer):
    """Whether ours or the peer's time on this row includes host work (bench_w4a16's host_late)."""
    return peers_chart.late(row) or peers_chart.late(row, peer)


def parse_read_curve(text):
    """[(bytes, us), ...] by bytes from launch_cost.cu's output: the rows of its "plain read"
    table ("  MB  us  floor us  of floor  us over floor"). ValueError with fewer than two sizes,
    a size twice or a second table (two runs' output in one file)."""
    curve, inside, tables = [], False, 0
    for line in text.splitlines():
        if line.startswith("plain read"):
            inside, tables = True, tables + 1
            continue
        m = re.match(r"\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+\d", line) if inside else None
        if m:
            curve.append((float(m.group(1)) * (1 << 20), float(m.group(2))))
        elif inside and line.strip() and not line.lstrip().startswith("MB"):
            inside = False
    if tables > 1:
        raise ValueError("more than one plain-read table in the --reach file: give one run's output")
    if len(curve) < 2:
        raise ValueError("no plain-read table (two or more sizes) in the --reach file")
    if len({b for b, _ in curve}) != len(curve):
        raise ValueError("a size appears twice in the --reach file's plain-read table")
    return sorted(curve)


def plain_read_us(curve, nbytes):
    """The curve's time for nbytes: linear between its two nearest sizes, and along its first or
    last segment outside them (time is close to linear in the bytes beyond a few MB)."""
    i = 1
    while i < len(curve) - 1 and curve[i][0] < nbytes:
        i += 1
    (b0, t0), (b1, t1) = curve[i - 1], curve[i]
    return t0 + (t1 - t0) * (nbytes - b0) / (b1 - b0)


def reach(row, curve):
    """floor / (a plain read of the floor's bytes, timed as the bench times a call)."""
    return row["floor_us"] / plain_read_us(curve, row["floor_us"] * STREAM_BYTES_PER_US)


def judge(rows, curve=None):
    """{bar: {"judged": n, "met": n, "host_bound": n, "misses": [(how far, row name), ...] worst
    first}}; host_bound: the judged rows timed host-bound (the Marlin bar's). With a plain-read
    curve, the decode floor bar also has "plain_read_misses": its misses whose plain read misses
    the bar too."""
    bars = {name: {"judged": 0, "met": 0, "host_bound": 0, "misses": []}
            for name in ("decode floor", "decode Marlin", "prefill BF16", "checks")}
    if curve is not None:
        bars["decode floor"]["plain_read_misses"] = 0

    def count(name, met, miss, bound=False):
        bars[name]["judged"] += 1
        bars[name]["host_bound"] += bound
        if met:
            bars[name]["met"] += 1
        else:
            bars[name]["misses"].append((miss[0], miss[1] + (" (host-bound)" if bound else "")))

    for row in rows:
        count("checks", row["check"] == "ok", (0.0, row_name(row) + ": " + row["check"]))
        if is_decode(row):
            if row["floor_us"] >= SMALL_FLOOR_US:
                frac = floor_fraction(row)
                text = f"{row_name(row)}: {100 * frac:.1f}% of the floor"
                if curve is not None:
                    read = reach(row, curve)
                    bars["decode floor"]["plain_read_misses"] += frac < FLOOR_BAR and read < FLOOR_BAR
                    text += f" (a plain read: {100 * read:.1f}%)"
                count("decode floor", frac >= FLOOR_BAR, (frac, text))
            ratio = marlin_ratio(row)
            if ratio is not None:
                count("decode Marlin", ratio <= MARLIN_BAR, (-ratio, f"{row_name(row)}: {ratio:.3f}x Marlin"),
                      host_bound(row, "marlin"))
        elif row.get("grouped_mm_bf16_us"):
            ratio = row["chord_us"] / row["grouped_mm_bf16_us"]
            count("prefill BF16", ratio <= BF16_BAR, (-ratio, f"{row_name(row)}: {ratio:.3f}x BF16"))
    for bar in bars.values():
        bar["misses"].sort()
    return bars


def load_rows(paths):
    """The rows of the results files; ValueError for a run at other points than the sets'
    (bench_w4a16.py --sweep), whose rows the bars do not judge."""
    rows = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        if "--sweep" in doc.get("meta", {}).get("command", ""):
            raise ValueError(f"{path} ran other points than the sets' (--sweep); the bars judge the sets' rows")
        rows.extend(doc["rows"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="bench.json / generalization.json files")
    parser.add_argument("--misses", type=int, default=10, help="misses listed per bar, worst first")
    parser.add_argument("--json", default=None, help="also write the verdicts here")
    parser.add_argument("--reach", default=None, metavar="CURVE",
                        help="launch_cost.cu's output on the GPU of the results: count the decode floor "
                             "misses that a plain read of their bytes misses too")
    args = parser.parse_args(argv)
    if argv is None:  # as a command: a closed pipe (`| head`) ends it quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    curve = None
    if args.reach:
        try:
            with open(args.reach) as f:
                curve = parse_read_curve(f.read())
        except (OSError, ValueError) as e:
            parser.error(f"--reach {args.reach}: {e}")
    try:
        rows = load_rows(args.results)
    except ValueError as e:
        parser.error(str(e))
    bars = judge(rows, curve)
    for name, bar in bars.items():
        bound = f" ({bar['host_bound']} of the {bar['judged']} host-bound)" if bar["host_bound"] else ""
        if "plain_read_misses" in bar:
            bound += f"; a plain read of their bytes misses it too on {bar['plain_read_misses']} of the misses"
        print(f"{name:14s} {bar['met']:4d} of {bar['judged']:4d} met{bound}")
        for _, text in bar["misses"][:args.misses]:
            print(f"    {text}")
        if len(bar["misses"]) > args.misses:
            print(f"    ... {len(bar['misses']) - args.misses} more")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: dict(judged=b["judged"], met=b["met"], host_bound=b["host_bound"],
                                  misses=[t for _, t in b["misses"]],
                                  **({"plain_read_misses": b["plain_read_misses"]} if "plain_read_misses" in b else {}))
                       for name, b in bars.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
