"""Two summaries of a lab/kernel_check/decode_explore.py run (CPU), from its JSON (or .json.gz):

- floor: over the calls with a read floor of at least --min-floor-us (the issue's 85% bar
  excepts shorter ones), the median % of the floor and the count at >= 85% of the library as
  shipped (`default`: rule and search) and of the fastest forced setting per call;
- group sums (settings of `--grid gs`): per tile, the time of the offset form over the
  correction form's (CHORD_W4A16_GROUP_SUMS=1; below 1 the offset form is faster), and per INT4
  call the best tile of each form against each other.

    python3 lab/kernel_check/explore_summary.py decode_explore.json[.gz] [--min-floor-us 10]
"""
import argparse
import collections
import gzip
import json
import statistics


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    rows = {r["id"]: r for r in doc["rows"]}
    us = collections.defaultdict(dict)
    for r in doc["results"]:
        if r.get("ok") and r.get("us"):
            us[r["row"]][r["setting"]] = r["us"]
    return doc, rows, us


def floor_summary(rows, us, min_floor_us):
    shipped, best = [], []
    for rid, d in us.items():
        forced = [v for k, v in d.items() if not k.startswith("default")]
        if "default" not in d or not forced or rows[rid]["floor_us"] < min_floor_us:
            continue
        shipped.append(100 * rows[rid]["floor_us"] / d["default"])
        best.append(100 * rows[rid]["floor_us"] / min(forced))
    print(f"calls with a floor >= {min_floor_us} us: {len(shipped)}")
    for name, v in (("shipped (rule + search)", shipped), ("fastest forced setting", best)):
        print(f"  {name}: median {statistics.median(v):.1f}% of the floor, >= 85% on {sum(x >= 85 for x in v)}")


def group_sums_summary(rows, us):
    pairs, best = collections.defaultdict(list), []
    for rid, d in us.items():
        if rows[rid]["weight"] != "int4":
            continue
        offset = {k: v for k, v in d.items() if not k.startswith("default") and not k.endswith("gs1")}
        corr = {k[:-3]: v for k, v in d.items() if k.endswith("gs1")}
        if not offset or not corr:
            continue
        best.append(min(offset.values()) / min(corr.values()))
        for k, v in corr.items():
            if k in offset:
                pairs[k].append(offset[k] / v)
    if not best:
        print("no settings in both group-sum forms")
        return
    b = sorted(best)
    print(f"best tile per INT4 call, offset form time / correction form time over {len(b)} calls: median "
          f"{statistics.median(b):.3f} (p10 {b[len(b) // 10]:.3f}, p90 {b[9 * len(b) // 10]:.3f}); the offset form "
          f"faster by > 3% on {sum(x < 0.97 for x in b)}, slower by > 3% on {sum(x > 1.03 for x in b)}")
    for k, v in sorted(pairs.items()):
        print(f"  {k}: median {statistics.median(v):.3f} over {len(v)} calls")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("explore_json")
    ap.add_argument("--min-floor-us", type=float, default=10.0)
    args = ap.parse_args()
    doc, rows, us = load(args.explore_json)
    print(f"{doc['meta']['gpu']}, grid {doc['meta']['grid']}")
    floor_summary(rows, us, args.min_floor_us)
    group_sums_summary(rows, us)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
