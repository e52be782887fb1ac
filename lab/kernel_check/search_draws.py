"""Which tile the decode tile search would keep, judged on one routing or on two (CPU).

Reads lab/kernel_check/decode_explore.py's JSON (every tile timed on every decode call of the
generalization set, whose calls come in pairs of one shape: a uniform and a skewed draw of the
same rows). For each pair it takes the search's candidates that the file timed (the rule's
tile and those of ops/w4a16_search.cpp's kSearchTiles, read from that file, that the grid
holds) and reports, per draw, each policy's tile time over the fastest candidate's:

- rule: the rule's tile;
- uniform: the search timing the uniform call alone (the fastest, if 3% ahead of the rule's);
- worse: the tile whose worse relative time over the two draws is the least (3% margin).

With --marlin, a generalization results file that timed vLLM's Marlin MoE
(`bench_w4a16.py --set generalization --peers marlin`) on the same calls: per policy, how many
calls would take more than 0.9x Marlin's time (issue 29's bar), and how many would with the
fastest timed setting of each call (the most that picking tiles can do). The two runs' times
come from different processes, so counts near the line move by a few from run to run.

    python3 lab/kernel_check/search_draws.py decode_explore.json[.gz] [--marlin RESULTS.json]
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys

import explore_summary  # beside this file: the run's rows and per-setting times

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARGIN = 0.03  # ops/w4a16_search.hpp kW4A16SearchMargin
sys.path.insert(0, os.path.join(ROOT, "bench"))
import peers_chart  # noqa: E402  (torch-free: the peers' bars)

MARLIN_BAR = peers_chart.BARS["marlin"]  # issue 29: chord <= 0.9x Marlin's time on every decode row


def search_tiles():
    """ops/w4a16_search.cpp's kSearchTiles, read from the source: (BM, BN, BK, stages, split-K)."""
    with open(os.path.join(ROOT, "ops", "w4a16_search.cpp")) as f:
        body = re.search(r"kSearchTiles\[\]\s*=\s*\{(.*?)\};", f.read(), re.S)
    tiles = [tuple(int(v) for v in t.split(",")) for t in re.findall(r"\{([\d\s,]+)\}", body.group(1))]
    if not tiles or any(len(t) != 5 for t in tiles):
        raise SystemExit("search_draws: kSearchTiles in ops/w4a16_search.cpp no longer reads as 5-int tiles")
    return tiles


def name(bm, bn, bk, stages, sk):
    return f"m{bm}n{bn}k{bk}s{stages}sk{sk}"


def rule_name(row):
    c = row["rule"]
    if c["engine"] != "mma_sync":
        return None
    return name(*(int(c[k] or 1) for k in ("block_m", "block_n", "block_k", "stages", "split_k")))


def choose(cands, score):
    best = min(cands, key=score)
    return best if score(best) < score(cands[0]) * (1 - MARGIN) else cands[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("explore_json")
    ap.add_argument("--marlin", metavar="RESULTS_JSON", default=None,
                    help="generalization results with marlin_us per call: count the calls over 0.9x Marlin")
    args = ap.parse_args()
    marlin = {}
    if args.marlin:
        with open(args.marlin) as f:
            for r in json.load(f)["rows"]:
                if r.get("marlin_us"):
                    marlin[(r["split"], r["mode"], r["x"], r["proj"], str(r["draw"]))] = r["marlin_us"]
    doc, rows, us = explore_summary.load(args.explore_json)
    tiles = search_tiles()
    pairs = collections.defaultdict(dict)
    for rid, r in rows.items():
        if r["set"] == "generalization" and r["weight"] == "int4":
            pairs[(r["split"], r["mode"], r["x"], r["proj"])][str(r["draw"])] = rid
    out = collections.defaultdict(list)
    over = collections.Counter()  # (policy, draw) -> calls over the Marlin bar
    with_marlin = 0
    for key, d in pairs.items():
        if "uniform" not in d or "skewed" not in d:
            continue
        u, s = us[d["uniform"]], us[d["skewed"]]
        rule = rule_name(rows[d["uniform"]])
        if rule is None or rule not in u or rule not in s:
            continue
        bm = int(rows[d["uniform"]]["rule"]["block_m"])
        cands = [rule] + [name(*t) for t in tiles if t[0] >= bm and name(*t) in u and name(*t) in s
                          and name(*t) != rule]
        bu, bs = min(u[c] for c in cands), min(s[c] for c in cands)
        picks = {"rule": cands[0], "uniform": choose(cands, lambda c: u[c]),
                 "worse": choose(cands, lambda c: max(u[c] / bu, s[c] / bs))}
        for policy, c in picks.items():
            out[policy].append((u[c] / bu, s[c] / bs))
        for draw, times in (("uniform", u), ("skewed", s)):
            m = marlin.get(key + (draw,))
            if m is None:
                continue
            with_marlin += 1
            for policy, c in picks.items():
                over[(policy, draw)] += times[c] / m > MARLIN_BAR
            fastest = min(v for name_, v in times.items() if not name_.startswith("default"))
            over[("fastest", draw)] += fastest / m > MARLIN_BAR
    print(f"{doc['meta']['gpu']}: {len(out['rule'])} shapes with a uniform and a skewed call; "
          "tile time / fastest candidate's")
    for policy, v in out.items():
        line = [policy.ljust(8)]
        for i, draw in enumerate(("uniform", "skewed")):
            x = sorted(t[i] for t in v)
            line.append(f"{draw}: median {statistics.median(x):.3f} p90 {x[int(0.9 * len(x))]:.3f} "
                        f"max {x[-1]:.3f} (> 1.05: {sum(t > 1.05 for t in x)})")
        print("  ".join(line))
    if args.marlin:
        print(f"calls over {MARLIN_BAR}x Marlin's time, of the {with_marlin} these pairs have Marlin times for "
              "(fastest: each call's fastest timed setting, either group-sum form, any tile the run timed):")
        for policy in list(out) + ["fastest"]:
            print(f"  {policy.ljust(8)} uniform {over[(policy, 'uniform')]}  skewed {over[(policy, 'skewed')]}  "
                  f"total {over[(policy, 'uniform')] + over[(policy, 'skewed')]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
