"""Lists, without a GPU, the config the resolver picks for every call of the generalization set
(shapes/suite.json; the calls, their routing draws and floors come from bench/generalization.py,
the same ones `bench/bench_w4a16.py --set generalization` times), then how often each config is
picked and where from (a tuning table row, the WGMMA defaults, the heuristic).

    python3 lab/generalization_configs.py [--chord build/chord] [--quick] [--only TEXT] [--json FILE]

--chord is the `chord` CLI to ask (default: this tree's build/chord, else the one on PATH);
CHORD_W4A16_* variables apply as they do to the library, so a rule change or an override can be
seen on every row before a GPU run.
"""
import argparse
import collections
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "bench"))
import generalization  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chord", default=None, help="the chord CLI (default build/chord, else chord on PATH)")
    parser.add_argument("--quick", action="store_true", help="the rows' quick values only")
    parser.add_argument("--only", default=None, help="only the scenarios whose name contains this")
    parser.add_argument("--arch", default=generalization.ARCH)
    parser.add_argument("--json", default=None, help="also write the calls and their configs here")
    args = parser.parse_args()
    cli = args.chord or os.path.join(HERE, os.pardir, "build", "chord")
    if not os.path.exists(cli):
        cli = shutil.which("chord")
    if not cli:
        sys.exit("no chord CLI: build it (scripts/setup.sh) or pass --chord")
    calls = generalization.resolve_configs(generalization.calls(quick=args.quick, only=args.only), cli=[cli],
                                           arch=args.arch, jobs=2)
    print(f"{'scenario':28s} {'x':>3s} {'proj':7s} {'N x K':>13s} {'E':>3s} {'rows':>4s} {'act':>3s} "
          f"{'floor_us':>8s}  config [source]")
    for c in calls:
        print(f"{c['scenario']:28s} {c['x']:>3} {c['proj']:7s} {c['n']:>6} x {c['k']:<5} {c['experts']:>3} "
              f"{c['routed_rows']:>4} {c['active_experts']:>3} {c['floor_us']:8.1f}  "
              f"{generalization.config_label(c['config'])} [{c['config'].get('source')}]")
    picks = collections.defaultdict(lambda: [0, set(), set()])
    for c in calls:
        entry = picks[(generalization.config_label(c["config"]), c["config"].get("source", "?").split(" row ")[0])]
        entry[0] += 1
        entry[1].add(c["split"])
        entry[2].add(c["x"])
    print(f"\n{len(calls)} calls; configs picked (calls, splits, sweep values):")
    for (label, source), (count, splits, xs) in sorted(picks.items(), key=lambda kv: -kv[1][0]):
        print(f"  {count:4d}  {label}  [{source}]  x in {sorted(xs)}  {len(splits)} splits: "
              f"{', '.join(sorted(splits))}")
    errors = [c for c in calls if "error" in c["config"]]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(calls, f, indent=1)
    if errors:
        print(f"{len(errors)} calls have no config (chord config failed)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
