"""Reads lab/kernel_check/decode_explore.py's JSON (CPU): per row the best config and its % of
the read floor against the current rule's (`default`), the worst rows, then what the best configs
go with (CTAs vs SMs, K, N, rows per active expert), to derive a decode rule.

    python3 lab/kernel_check/decode_explore_report.py FILE [--rows N] [--target 85]
    python3 lab/kernel_check/decode_explore_report.py --self-test
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile


def ctas(row, cfg):
    bm, bn, sk = int(cfg["block_m"]), int(cfg["block_n"]), int(cfg.get("split_k") or 1)
    return sum((r + bm - 1) // bm for r in row["expert_rows"]) * ((row["n"] + bn - 1) // bn) * sk


def load(path):
    doc = json.load(open(path))
    rows = {r["id"]: r for r in doc["rows"]}
    by_row = {}
    for res in doc["results"]:
        if res.get("ok") and res.get("us"):
            by_row.setdefault(res["row"], {})[res["setting"]] = res["us"]
    return doc, rows, by_row


def bucket(v, edges):
    for e in edges:
        if v <= e:
            return f"<={e}"
    return f">{edges[-1]}"


def report(path, n_rows=40, target=85.0, out=sys.stdout):
    doc, rows, by_row = load(path)
    settings = doc["settings"]
    p = lambda *a: print(*a, file=out)  # noqa: E731
    best = {}
    for rid, times in by_row.items():
        forced = {s: t for s, t in times.items() if settings.get(s.split("@")[0])}
        if not forced:
            continue
        s, t = min(forced.items(), key=lambda kv: kv[1])
        rule = times.get("default")
        best[rid] = dict(setting=s, us=t, rule_us=rule, floor=rows[rid]["floor_us"])
    meta = doc["meta"]
    p(f"{len(rows)} rows, {len(settings)} settings ({len(meta.get('not_run', []))} not run), "
      f"{meta.get('reps')} reps, {meta.get('gpu')}, {meta.get('seconds')} s")
    drift = [by_row[r]["default@end"] / by_row[r]["default"] for r in by_row
             if "default" in by_row[r] and "default@end" in by_row[r]]
    if drift:
        p(f"drift default@end / default: median {statistics.median(drift):.3f}, "
          f"min {min(drift):.3f}, max {max(drift):.3f}")
    pct = lambda r, us: 100.0 * r["floor_us"] / us if us else 0.0  # noqa: E731
    rule_pct = [pct(rows[r], b["rule_us"]) for r, b in best.items() if b["rule_us"]]
    best_pct = [pct(rows[r], b["us"]) for r, b in best.items()]
    if rule_pct:
        p(f"% of floor, rule: median {statistics.median(rule_pct):.1f}, min {min(rule_pct):.1f}, "
          f"rows >= {target:.0f}%: {sum(x >= target for x in rule_pct)}/{len(rule_pct)}")
    if best_pct:
        p(f"% of floor, best forced per row: median {statistics.median(best_pct):.1f}, min {min(best_pct):.1f}, "
          f"rows >= {target:.0f}%: {sum(x >= target for x in best_pct)}/{len(best_pct)}")
    p(f"\nworst {n_rows} rows by best %: row | rule config | rule % | best setting | best % | CTAs/SM")
    ranked = sorted(best, key=lambda r: pct(rows[r], best[r]["us"]))
    for rid in ranked[:n_rows]:
        r, b = rows[rid], best[rid]
        cfg = settings[b["setting"].split("@")[0]]
        p(f"  {rid} ({r['n']}x{r['k']}, {r['routed_rows']} rows/{r['active_experts']} exp) | "
          f"{r.get('rule_config', '?')} | {pct(r, b['rule_us']):.1f} | {b['setting']} | {pct(r, b['us']):.1f} | "
          f"{ctas(r, cfg) / r['sms']:.2f}")
    # Settings: how often best / within 5% of best, and the single best setting overall.
    within = {}
    for rid, times in by_row.items():
        if rid not in best:
            continue
        for s, t in times.items():
            if settings.get(s.split("@")[0]) and t <= best[rid]["us"] * 1.05:
                within[s] = within.get(s, 0) + 1
    p("\nsettings within 5% of a row's best (top 15):")
    for s, c in sorted(within.items(), key=lambda kv: -kv[1])[:15]:
        p(f"  {s:22s} {c}")
    # Features: what the best config goes with.
    p("\nbest config vs features (counts of best BN / BK / split-K / BM per bucket):")
    feats = {
        "CTAs(bm8,bn64,sk1)/SM": lambda r: bucket(ctas(r, dict(block_m=8, block_n=64, split_k=1)) / r["sms"],
                                                  [0.25, 0.5, 1, 2, 4]),
        "K": lambda r: bucket(r["k"], [512, 1536, 3072, 5120, 8192]),
        "N": lambda r: bucket(r["n"], [512, 2048, 4096, 8192]),
        "rows/active expert": lambda r: bucket(r["rows_per_active_expert"], [1, 2, 4, 8, 16, 32, 64]),
    }
    for fname, f in feats.items():
        p(f"  {fname}:")
        groups = {}
        for rid, b in best.items():
            groups.setdefault(f(rows[rid]), []).append(settings[b["setting"].split("@")[0]])
        for key in sorted(groups, key=lambda k: (len(k), k)):
            cs = groups[key]

            def mode(field):
                vals = [c[field] for c in cs]
                top = max(set(vals), key=vals.count)
                return f"{top}({vals.count(top)})"
            p(f"    {key:8s} n={len(cs):3d}  bn {mode('block_n')}  bk {mode('block_k')}  sk {mode('split_k')}  "
              f"bm {mode('block_m')}  stages {mode('stages')}")
    p("\nbest split-K against log2(SMs / CTAs without split): rows per (log2 bucket, best split-K)")
    table = {}
    for rid, b in best.items():
        r, cfg = rows[rid], settings[b["setting"].split("@")[0]]
        base = ctas(r, dict(cfg, split_k=1))
        key = round(math.log2(max(r["sms"] / max(base, 1), 1e-3)))
        table.setdefault(key, {}).setdefault(cfg["split_k"], 0)
        table[key][cfg["split_k"]] += 1
    for key in sorted(table):
        p(f"  log2(SMs/CTAs)={key:+d}: " + ", ".join(f"sk{k}: {v}" for k, v in sorted(table[key].items())))
    return best


def synthetic(path):
    """A small JSON in decode_explore.py's format: two rows, default + two forced settings."""
    rows = [dict(id="a|x=1|gate_up", n=384, k=4096, experts=128, active_experts=8, routed_rows=8, sms=132,
                 rows_per_active_expert=1.0, expert_rows=[1] * 8, floor_us=1.6, rule_config="mma_sync bm8"),
            dict(id="b|x=64|down", n=7168, k=2048, experts=32, active_experts=32, routed_rows=512, sms=132,
                 rows_per_active_expert=16.0, expert_rows=[16] * 32, floor_us=30.0, rule_config="mma_sync bm16")]
    settings = {"default": None, "default@end": None,
                "m8n64k256s2sk8": dict(engine="mma_sync", block_m=8, block_n=64, block_k=256, stages=2, split_k=8),
                "m16n128k128s3sk1": dict(engine="mma_sync", block_m=16, block_n=128, block_k=128, stages=3, split_k=1)}
    results = [dict(row="a|x=1|gate_up", setting="default", us=18.6, ok=True),
               dict(row="a|x=1|gate_up", setting="m8n64k256s2sk8", us=4.0, ok=True),
               dict(row="a|x=1|gate_up", setting="m16n128k128s3sk1", us=None, ok=False, error="rejected"),
               dict(row="a|x=1|gate_up", setting="default@end", us=18.0, ok=True),
               dict(row="b|x=64|down", setting="default", us=40.0, ok=True),
               dict(row="b|x=64|down", setting="m8n64k256s2sk8", us=50.0, ok=True),
               dict(row="b|x=64|down", setting="m16n128k128s3sk1", us=33.0, ok=True)]
    json.dump(dict(meta=dict(reps=10, gpu="synthetic", seconds=1, not_run=[]), settings=settings, rows=rows,
                   results=results), open(path, "w"))


def self_test():
    import io
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.json")
        synthetic(path)
        buf = io.StringIO()
        best = report(path, out=buf)
    assert best["a|x=1|gate_up"]["setting"] == "m8n64k256s2sk8", best
    assert best["b|x=64|down"]["setting"] == "m16n128k128s3sk1", best
    text = buf.getvalue()
    assert "drift" in text and "40.0" in text and "90.9" in text, text  # 1.6/4.0, 30/33
    print("self-test ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?")
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--target", type=float, default=85.0)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.file:
        ap.error("a JSON file, or --self-test")
    report(args.file, args.rows, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
